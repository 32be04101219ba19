import { useEffect, useMemo, useState } from 'preact/hooks';

import { get } from '../api';
import { StateBadge } from '../components/state_badge';
import { ago } from '../format';
import { href } from '../router';
import type { EnvironmentOverview } from '../types';

// A filter: one of the values seen, or all.
function Choice(props: { label: string; value: string; options: string[]; onChange: (v: string) => void }) {
  return (
    <label>
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)}>
        <option value="">all</option>
        {props.options.map((o) => <option value={o}>{o.replace(/_/g, ' ')}</option>)}
      </select>
    </label>
  );
}

// Every environment of the organization: its runner, what holds it, its last deployment and
// what waits behind it; filtered by project, state and runner.
export function OverviewPage() {
  const [environments, setEnvironments] = useState<EnvironmentOverview[] | null>(null);
  const [error, setError] = useState('');
  const [project, setProject] = useState('');
  const [state, setState] = useState('');
  const [runner, setRunner] = useState('');
  const [text, setText] = useState('');

  useEffect(() => {
    const load = () =>
      get<{ environments: EnvironmentOverview[] }>('/overview')
        .then((o) => { setEnvironments(o.environments); setError(''); })
        .catch((e) => setError(e instanceof Error ? e.message : String(e)));
    void load();
    const timer = setInterval(load, 5000);
    return () => clearInterval(timer);
  }, []);

  const distinct = (pick: (e: EnvironmentOverview) => string | null | undefined) =>
    [...new Set((environments ?? []).map(pick).filter((v): v is string => !!v))].sort();
  const projects = useMemo(() => distinct((e) => e.project_id), [environments]);
  const runners = useMemo(() => distinct((e) => e.runner_id), [environments]);
  const states = useMemo(() => distinct((e) => e.last_deployment?.state), [environments]);
  const shown = (environments ?? []).filter(
    (e) =>
      (!project || e.project_id === project) &&
      (!runner || e.runner_id === runner) &&
      (!state || e.last_deployment?.state === state) &&
      (!text || `${e.project_id}/${e.id} ${e.display_name ?? ''}`.toLowerCase().includes(text.toLowerCase())),
  );

  return (
    <main>
      <h1>Environments</h1>
      <div class="filters" role="search">
        <Choice label="Project" value={project} options={projects} onChange={setProject} />
        <Choice label="State" value={state} options={states} onChange={setState} />
        <Choice label="Runner" value={runner} options={runners} onChange={setRunner} />
        <label>
          Find
          <input type="search" value={text} placeholder="project/env"
                 onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        </label>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {!environments && !error && <p class="muted">Loading…</p>}
      {environments && (
        <table class="environments">
          <caption class="visually-hidden">Environments</caption>
          <thead>
            <tr>
              <th scope="col">Environment</th>
              <th scope="col">Runner</th>
              <th scope="col">Held by</th>
              <th scope="col">Last deployment</th>
              <th scope="col">Queued</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((e) => (
              <tr key={`${e.project_id}/${e.id}`}>
                <th scope="row">
                  <a href={href({ page: 'environment', project: e.project_id, env: e.id })}>
                    <span class="muted">{e.project_id} / </span>{e.id}
                  </a>
                  {e.display_name && e.display_name !== e.id && <div class="muted small">{e.display_name}</div>}
                </th>
                <td data-label="Runner">{e.runner_id ?? <span class="muted">not chosen yet</span>}</td>
                <td data-label="Held by">
                  {e.holder ? (
                    <a href={href({ page: 'deployment', id: e.holder.id })}>
                      {e.holder.id} <span class="muted">{ago(e.holder.updated_at)}</span>
                    </a>
                  ) : (
                    <span class="muted">free</span>
                  )}
                </td>
                <td data-label="Last deployment">
                  {e.last_deployment ? (
                    <a href={href({ page: 'deployment', id: e.last_deployment.id })}>
                      <StateBadge state={e.last_deployment.state} /> {e.last_deployment.op}{' '}
                      <span class="muted">{ago(e.last_deployment.updated_at)}</span>
                    </a>
                  ) : (
                    <span class="muted">none</span>
                  )}
                </td>
                <td data-label="Queued">{e.queued}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {environments && shown.length === 0 && <p class="muted">No environment matches.</p>}
    </main>
  );
}
