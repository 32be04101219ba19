import { useCallback, useEffect, useState } from 'preact/hooks';

import { can, get, post } from '../api';
import { ConfirmButton } from '../components/confirm_button';
import { ErrorText } from '../components/error_text';
import { StateBadge } from '../components/state_badge';
import { ago } from '../format';
import { href } from '../router';
import type { Deployment, StateSummary, StateVersion } from '../types';

// One environment: its deployments, newest first, and its TF state's versions, lock and
// history, with rollback and unlock for an admin (each confirmed, each kept in the history).
export function EnvironmentPage({ project, env }: { project: string; env: string }) {
  const base = `/projects/${project}/envs/${env}`;
  const [deployments, setDeployments] = useState<Deployment[] | null>(null);
  const [state, setState] = useState<StateSummary | null>(null);
  const [versions, setVersions] = useState<StateVersion[]>([]);
  const [stateError, setStateError] = useState<unknown>(null);
  const [error, setError] = useState<unknown>(null);
  const [reason, setReason] = useState('');

  const load = useCallback(async () => {
    try {
      setDeployments((await get<{ items: Deployment[] }>(`${base}/deployments`)).items);
      setError(null);
    } catch (e) {
      setError(e);
    }
    try {
      setState(await get<StateSummary>(`${base}/state`));
      setVersions((await get<{ items: StateVersion[] }>(`${base}/state/versions`)).items);
      setStateError(null);
    } catch (e) {
      setStateError(e); // a state kept elsewhere than berth's backend has no versions here
    }
  }, [base]);

  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), 5000);
    return () => clearInterval(timer);
  }, [load]);

  return (
    <main>
      <p><a href={href({ page: 'overview' })}>← Environments</a></p>
      <h1>{project} / {env}</h1>
      <ErrorText error={error} />
      <section aria-labelledby="deployments-title">
        <h2 id="deployments-title">Deployments</h2>
        {deployments && deployments.length === 0 && <p class="muted">None yet.</p>}
        {deployments && deployments.length > 0 && (
          <table class="list">
            <thead>
              <tr><th scope="col">Deployment</th><th scope="col">Op</th><th scope="col">State</th><th scope="col">Changed</th></tr>
            </thead>
            <tbody>
              {deployments.map((d) => (
                <tr key={d.id}>
                  <th scope="row"><a href={href({ page: 'deployment', id: d.id })}>#{d.sequence} {d.id}</a></th>
                  <td data-label="Op">{d.op}</td>
                  <td data-label="State"><StateBadge state={d.state} /></td>
                  <td data-label="Changed">{ago(d.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <section aria-labelledby="state-title">
        <h2 id="state-title">State</h2>
        {stateError ? <ErrorText error={stateError} /> : null}
        {state && (
          <>
            <p>
              {state.versions} versions ·{' '}
              {state.lock ? (
                <span class="warning-text">
                  locked by {state.lock.run_id ?? 'someone outside berth'}
                  {state.lock.operation && ` (${state.lock.operation})`} for {state.lock.age_seconds}s
                </span>
              ) : (
                'not locked'
              )}
            </p>
            {state.lock && can('admin') && (
              <ConfirmButton label="Unlock" title="Break the state's lock?" confirmLabel="Break the lock" danger
                             onConfirm={async () => {
                               await post(`${base}/state/unlock`, { reason });
                               await load();
                             }}>
                <p>Only for a runner lost with its node: a run still going would write over the state.</p>
                <label>
                  Reason (kept in the history)
                  <input value={reason} required onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
                </label>
              </ConfirmButton>
            )}
            <table class="list">
              <thead>
                <tr><th scope="col">Version</th><th scope="col">Written</th><th scope="col">By run</th><th scope="col">Size</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr>
              </thead>
              <tbody>
                {[...versions].reverse().map((v, i) => (
                  <tr key={v.version}>
                    <th scope="row">{v.version}{v.deleted && <span class="muted"> (deleted)</span>}{i === 0 && <span class="muted"> newest</span>}</th>
                    <td data-label="Written">{ago(v.created_at)}</td>
                    <td data-label="By run">{v.run_id || <span class="muted">by hand</span>}</td>
                    <td data-label="Size">{v.size} bytes</td>
                    <td>
                      {i > 0 && can('admin') && (
                        <ConfirmButton label={`Roll back to ${v.version}`} title={`Make version ${v.version} the newest?`}
                                       confirmLabel="Roll back" danger
                                       onConfirm={async () => {
                                         await post(`${base}/state/rollback`, { version: v.version });
                                         await load();
                                       }}>
                          <p>Version {v.version} is written again as a new version; nothing is overwritten.</p>
                          <p class="hash">sha256:{v.sha256}</p>
                        </ConfirmButton>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            {state.history.length > 0 && (
              <>
                <h3>Done by hand</h3>
                <ul>
                  {state.history.map((h) => (
                    <li>{h.action} by {h.actor}, {ago(h.at)}: {h.detail}</li>
                  ))}
                </ul>
              </>
            )}
          </>
        )}
      </section>
    </main>
  );
}
