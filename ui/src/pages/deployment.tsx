import { useCallback, useEffect, useState } from 'preact/hooks';

import { ApiError, can, currentSession, get, post } from '../api';
import { ChangeList } from '../components/change_list';
import { ConfirmButton } from '../components/confirm_button';
import { LogView } from '../components/log_view';
import { StateBadge } from '../components/state_badge';
import { stateLabel } from '../format';
import { href } from '../router';
import { kEndedStates, type ChangeListDocument, type Deployment, type Output } from '../types';

const kLiveStates = ['queued', 'dispatched', 'running'];

// A sensitive output: hidden until a user who may deploy asks for it (GET outputs?sensitive=
// true); one sealed to the log recipient's key is opened only with that key (berth outputs
// --identity), never in the browser.
function Hidden({ deploymentId, name, sealed }: { deploymentId: string; name: string; sealed: boolean }) {
  const [value, setValue] = useState<unknown>(undefined);
  const [error, setError] = useState('');
  if (sealed) return <span class="muted">sealed to the owner's key</span>;
  if (value !== undefined) return <code>{JSON.stringify(value)}</code>;
  if (!can('deploy')) return <span class="muted">sensitive</span>;
  const reveal = async () => {
    try {
      const o = await get<{ outputs: Record<string, Output> }>(
        `/deployments/${encodeURIComponent(deploymentId)}/outputs?sensitive=true`);
      setValue(o.outputs[name]?.value ?? null);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };
  return (
    <>
      <span class="muted">sensitive</span>{' '}
      <button class="button small" onClick={reveal} aria-label={`Reveal ${name}`}>Reveal</button>
      {error && <span class="error" role="alert"> {error}</span>}
    </>
  );
}

// One deployment: its timeline, the plan waiting for approval (Approve sends exactly its hash),
// Cancel, the outputs of its apply, and its live log.
export function DeploymentPage({ id }: { id: string }) {
  const [deployment, setDeployment] = useState<Deployment | null>(null);
  const [outputs, setOutputs] = useState<Record<string, Output> | null>(null);
  const [changes, setChanges] = useState<ChangeListDocument | null>(null);
  const [error, setError] = useState('');

  const load = useCallback(async () => {
    try {
      const d = await get<Deployment>(`/deployments/${encodeURIComponent(id)}`);
      setDeployment(d);
      if (!changes && (d.plan || kEndedStates.includes(d.state))) {
        // 404: no plan yet, or none listed (an encrypted log's): the counts stand alone.
        const listed = await get<ChangeListDocument>(`/deployments/${encodeURIComponent(id)}/changes`)
          .catch((e) => { if (e instanceof ApiError && e.status === 404) return null; throw e; });
        if (listed) setChanges(listed);
      }
      if (d.state === 'succeeded' && d.op !== 'plan' && !d.plan_only) {
        const o = await get<{ outputs: Record<string, Output> }>(`/deployments/${encodeURIComponent(id)}/outputs`);
        setOutputs(o.outputs);
      }
      setError('');
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  }, [id, changes]);

  useEffect(() => {
    void load();
    const timer = setInterval(() => void load(), 3000);
    return () => clearInterval(timer);
  }, [load]);

  if (!deployment) {
    return <main>{error ? <p class="error" role="alert">{error}</p> : <p class="muted">Loading…</p>}</main>;
  }
  const d = deployment;
  const ended = kEndedStates.includes(d.state);
  const live = kLiveStates.includes(d.state);
  // A plan run that made its plan file: the deployment waited with it, or it was a plan.
  const planned = d.transitions.some((t) => t.state === 'waiting_approval') ||
                  (d.op === 'plan' && d.state === 'succeeded');
  return (
    <main>
      <p><a href={href({ page: 'overview' })}>← Environments</a></p>
      <h1>
        {d.op}{' '}
        <a class="muted" href={href({ page: 'environment', project: d.project_id, env: d.env_id })}>
          {d.project_id} / {d.env_id}
        </a>
      </h1>
      <div class="summary">
        <StateBadge state={d.state} />
        <span class="muted">{d.id} · #{d.sequence}</span>
        <div class="actions">
          {d.state === 'waiting_approval' && d.plan && can('approve') && (
            <ConfirmButton label="Approve" title="Apply exactly this plan?" confirmLabel="Approve and apply"
                           onConfirm={async () => {
                             await post(`/deployments/${encodeURIComponent(d.id)}/approve`, { plan_hash: d.plan!.hash });
                             await load();
                           }}>
              <p>
                {d.plan.add} to add, {d.plan.change} to change, {d.plan.destroy} to destroy
                {d.plan.replace ? `, ${d.plan.replace} to replace` : ''}.
              </p>
              <p class="hash">{d.plan.hash}</p>
            </ConfirmButton>
          )}
          {!ended && can('deploy') && (
            <ConfirmButton label="Cancel" title="Cancel this deployment?" confirmLabel="Cancel deployment" danger
                           onConfirm={async () => {
                             await post(`/deployments/${encodeURIComponent(d.id)}/cancel`);
                             await load();
                           }}>
              <p>A running plan or apply is interrupted; TF releases the state lock.</p>
            </ConfirmButton>
          )}
        </div>
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      {d.result?.error && (
        <p class="error" role="alert">{d.result.error.kind}: {d.result.error.message}</p>
      )}

      {d.plan && (
        <section aria-labelledby="plan-title">
          <h2 id="plan-title">Plan</h2>
          <ul class="plan-counts">
            <li class="plan-add">{d.plan.add} to add</li>
            <li class="plan-change">{d.plan.change} to change</li>
            <li class="plan-destroy">{d.plan.destroy} to destroy</li>
            {d.plan.replace !== undefined && <li class="plan-replace">{d.plan.replace} to replace</li>}
          </ul>
          <p class="hash" title="the plan's effect hash: Approve applies exactly this">{d.plan.hash}</p>
        </section>
      )}
      {changes && (
        <section aria-labelledby="changes-title">
          <h2 id="changes-title">Changes</h2>
          <ChangeList title="Resource changes" changes={changes.resource_changes} />
          <ChangeList title="Output changes" changes={changes.output_changes} />
          {changes.resource_changes.length + changes.output_changes.length === 0 && (
            <p class="muted">The plan changes nothing.</p>
          )}
        </section>
      )}

      {outputs && (
        <section aria-labelledby="outputs-title">
          <h2 id="outputs-title">Outputs</h2>
          <dl class="outputs">
            {Object.entries(outputs).map(([name, o]) => (
              <>
                <dt>{name}</dt>
                <dd>{o.redacted ? <Hidden deploymentId={d.id} name={name} sealed={o.sealed_value !== undefined} />
                                : <code>{JSON.stringify(o.value)}</code>}</dd>
              </>
            ))}
          </dl>
        </section>
      )}

      {planned && can('deploy') && (
        <section aria-labelledby="artifacts-title">
          <h2 id="artifacts-title">Artifacts</h2>
          <p>
            <a href={`/orgs/${encodeURIComponent(currentSession()!.org)}/deployments/${encodeURIComponent(d.id)}/artifacts/plan`}
               download={`${d.id}.tfplan`}>Download the plan file</a>{' '}
            <span class="muted">(it holds secrets in clear: for those who may deploy)</span>
          </p>
        </section>
      )}

      <section aria-labelledby="timeline-title">
        <h2 id="timeline-title">Timeline</h2>
        <ol class="timeline">
          {d.transitions.map((t) => (
            <li>
              <time dateTime={t.at}>{new Date(t.at).toLocaleString()}</time> {stateLabel(t.state)}
              {t.reason && <span class="muted"> — {t.reason}</span>}
            </li>
          ))}
          {(d.events ?? []).map((e) => (
            <li class={e.type === 'Warning' ? 'warning' : ''}>
              <time dateTime={e.last_at}>{new Date(e.last_at).toLocaleString()}</time> {e.reason}: {e.message}
              {e.count > 1 && <span class="muted"> ×{e.count}</span>}
            </li>
          ))}
        </ol>
      </section>

      <h2>Log</h2>
      <LogView deploymentId={d.id} live={live} onStreamEnd={() => void load()} />
    </main>
  );
}
