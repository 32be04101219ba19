// A log's ANSI colour escapes (SGR, `ESC[...m`) as styled segments; every other escape is
// dropped. The text is never HTML: it becomes text nodes, so a log cannot inject markup.

export interface Segment {
  text: string;
  classes: string; // ansi-bold, ansi-fg-1 ... (style.css), space-separated
}

interface Pen {
  bold: boolean;
  dim: boolean;
  underline: boolean;
  fg: number | null; // 0-15
  bg: number | null;
}

const kEscape = /\x1b\[([0-9;]*)([A-Za-z])|\x1b[^[]|\r/g;

function classesOf(pen: Pen): string {
  const out: string[] = [];
  if (pen.bold) out.push('ansi-bold');
  if (pen.dim) out.push('ansi-dim');
  if (pen.underline) out.push('ansi-underline');
  if (pen.fg !== null) out.push(`ansi-fg-${pen.fg}`);
  if (pen.bg !== null) out.push(`ansi-bg-${pen.bg}`);
  return out.join(' ');
}

function apply(pen: Pen, codes: number[]): void {
  for (const code of codes.length ? codes : [0]) {
    if (code === 0) Object.assign(pen, { bold: false, dim: false, underline: false, fg: null, bg: null });
    else if (code === 1) pen.bold = true;
    else if (code === 2) pen.dim = true;
    else if (code === 4) pen.underline = true;
    else if (code === 22) pen.bold = pen.dim = false;
    else if (code === 24) pen.underline = false;
    else if (code >= 30 && code <= 37) pen.fg = code - 30;
    else if (code === 39) pen.fg = null;
    else if (code >= 40 && code <= 47) pen.bg = code - 40;
    else if (code === 49) pen.bg = null;
    else if (code >= 90 && code <= 97) pen.fg = code - 90 + 8;
    else if (code >= 100 && code <= 107) pen.bg = code - 100 + 8;
  }
}

// A colouring that runs across lines: each call continues with the pen the last one left.
export class AnsiParser {
  private pen: Pen = { bold: false, dim: false, underline: false, fg: null, bg: null };

  parse(text: string): Segment[] {
    const segments: Segment[] = [];
    let last = 0;
    const push = (end: number) => {
      if (end > last) segments.push({ text: text.slice(last, end), classes: classesOf(this.pen) });
    };
    for (const match of text.matchAll(kEscape)) {
      push(match.index);
      last = match.index + match[0].length;
      if (match[2] === 'm') apply(this.pen, match[1].split(';').filter((s) => s !== '').map(Number));
    }
    push(text.length);
    return segments;
  }
}
