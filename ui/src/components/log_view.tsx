import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';

import { send } from '../api';
import { AnsiParser, type Segment } from '../ansi';

// Fixed in style.css (.log-line): rows are placed by arithmetic, so that only the rows in view
// are in the DOM and a finished log of 100,000 lines scrolls as fast as one of ten.
const kLineHeight = 18;
const kOverscan = 30;

interface Line {
  segments: Segment[];
  text: string; // for search
}

// Streams a deployment's log (GET .../logs?follow=true) while `live`, and renders it with its
// ANSI colours. It follows the end unless the user scrolls up; search finds lines.
export function LogView({ deploymentId, live, onStreamEnd }: {
  deploymentId: string;
  live: boolean;
  onStreamEnd: () => void;
}) {
  const lines = useRef<Line[]>([]);
  const [count, setCount] = useState(0);
  const [error, setError] = useState('');
  const [following, setFollowing] = useState(true);
  const [scrollTop, setScrollTop] = useState(0);
  const [viewHeight, setViewHeight] = useState(400);
  const [query, setQuery] = useState('');
  const [match, setMatch] = useState(-1);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const abort = new AbortController();
    const parser = new AnsiParser();
    let partial = '';
    lines.current = [];
    setCount(0);
    const take = (text: string, flush: boolean) => {
      const parts = (partial + text).split('\n');
      partial = flush ? '' : (parts.pop() ?? '');
      if (flush && parts[parts.length - 1] === '') parts.pop();
      for (const part of parts) {
        const segments = parser.parse(part);
        lines.current.push({ segments, text: segments.map((s) => s.text).join('') });
      }
      setCount(lines.current.length);
    };
    (async () => {
      const response = await send('GET', `/deployments/${encodeURIComponent(deploymentId)}/logs${live ? '?follow=true' : ''}`,
                                   { signal: abort.signal });
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        take(value, false);
      }
      take('', true);
      if (live) onStreamEnd();
    })().catch((e) => {
      if (!abort.signal.aborted) setError(e instanceof Error ? e.message : String(e));
    });
    return () => abort.abort();
  }, [deploymentId, live]);

  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    setViewHeight(el.clientHeight);
    if (following) el.scrollTop = el.scrollHeight;
  }, [count, following]);

  const onScroll = () => {
    const el = box.current!;
    setScrollTop(el.scrollTop);
    setFollowing(el.scrollTop + el.clientHeight >= el.scrollHeight - kLineHeight);
  };

  const matches = query
    ? lines.current.flatMap((line, i) => (line.text.toLowerCase().includes(query.toLowerCase()) ? [i] : []))
    : [];
  const goTo = (step: number) => {
    if (!matches.length) return;
    const next = (Math.max(0, matches.indexOf(match)) + step + matches.length) % matches.length;
    const index = match === -1 && step > 0 ? 0 : next;
    setMatch(matches[index]);
    setFollowing(false);
    box.current!.scrollTop = Math.max(0, matches[index] * kLineHeight - viewHeight / 2);
  };

  const first = Math.max(0, Math.floor(scrollTop / kLineHeight) - kOverscan);
  const last = Math.min(count, Math.ceil((scrollTop + viewHeight) / kLineHeight) + kOverscan);
  const rows = [];
  for (let i = first; i < last; i++) {
    const line = lines.current[i];
    const hit = matches.length > 0 && line.text.toLowerCase().includes(query.toLowerCase());
    rows.push(
      <div key={i} class={`log-line${hit ? ' log-hit' : ''}${i === match ? ' log-current' : ''}`}
           style={{ top: `${i * kLineHeight}px` }}>
        {line.segments.map((s) => (s.classes ? <span class={s.classes}>{s.text}</span> : s.text))}
      </div>,
    );
  }
  return (
    <section class="log" aria-label="Log">
      <div class="log-toolbar">
        <label>
          <span class="visually-hidden">Search the log</span>
          <input type="search" placeholder="Search the log" value={query}
                 onInput={(e) => { setQuery((e.target as HTMLInputElement).value); setMatch(-1); }}
                 onKeyDown={(e) => { if (e.key === 'Enter') goTo(e.shiftKey ? -1 : 1); }} />
        </label>
        <span class="muted" aria-live="polite">
          {query ? `${matches.length} matching lines` : `${count} lines`}
        </span>
        <button class="button" onClick={() => goTo(-1)} disabled={!matches.length}>Previous</button>
        <button class="button" onClick={() => goTo(1)} disabled={!matches.length}>Next</button>
        {!following && (
          <button class="button" onClick={() => setFollowing(true)}>Follow the end</button>
        )}
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="log-box" ref={box} onScroll={onScroll} tabIndex={0} role="log" aria-label="Deployment log">
        <div class="log-space" style={{ height: `${count * kLineHeight}px` }}>{rows}</div>
      </div>
    </section>
  );
}
