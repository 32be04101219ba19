import type { PlannedChange } from '../types';

// How a change's actions read: a replace is one word, not two.
function verb(actions: string[]): string {
  if (actions.length === 2 && actions.includes('delete') && actions.includes('create')) return 'replace';
  return actions[0] ?? '';
}

function Value({ text, sensitive, unknown }: { text?: string; sensitive: boolean; unknown?: boolean }) {
  if (text === undefined) return <span class="muted">—</span>;
  const masked = sensitive || unknown;
  return <code class={masked ? 'muted' : ''}>{text}</code>;
}

// The plan's changes (GET .../changes): each resource and output, its action, and each
// attribute that differs, before → after. Sensitive values never reach the page: berthd holds
// "(sensitive value)" in their place.
export function ChangeList({ title, changes }: { title: string; changes: PlannedChange[] }) {
  if (changes.length === 0) return null;
  return (
    <div class="changes">
      <h3>{title}</h3>
      {changes.map((c) => {
        const action = verb(c.actions);
        return (
          <details class="change" open={changes.length <= 20}>
            <summary>
              <span class={`action action-${action}`}>{action}</span> <code>{c.address}</code>
              {c.importing && <span class="muted"> (import)</span>}
            </summary>
            <table class="diff">
              <thead>
                <tr><th scope="col">Attribute</th><th scope="col">Before</th><th scope="col">After</th></tr>
              </thead>
              <tbody>
                {c.attributes.map((a) => (
                  <tr>
                    <th scope="row">{a.name}</th>
                    <td data-label="Before"><Value text={a.before} sensitive={a.sensitive} /></td>
                    <td data-label="After"><Value text={a.after} sensitive={a.sensitive} unknown={a.unknown} /></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </details>
        );
      })}
    </div>
  );
}
