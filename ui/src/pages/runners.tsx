import { useCallback, useEffect, useState } from 'preact/hooks';

import { can, listAll, post, put } from '../api';
import { ErrorText } from '../components/error_text';
import { JsonEditor } from '../components/json_editor';
import type { Runner, RunnerRule } from '../types';

// What the API sets and the editor leaves out.
function editable(object: object): object {
  const { version: _v, created_at: _c, updated_at: _u, ...rest } = object as Record<string, unknown>;
  return rest;
}

const kNewRunner = {
  id: 'my-runner',
  description: '',
  runner_configuration: { type: 'local' },
  state_storage_configuration: { type: 'berth' },
};
const kNewRule = { runner_id: 'my-runner', project_id: null, env_type_id: null };

// Runners and runner rules: read by everyone; created and edited with a configure token, in
// the API's own JSON, refused by the API with the same errors it gives anyone.
export function RunnersPage() {
  const [runners, setRunners] = useState<Runner[] | null>(null);
  const [rules, setRules] = useState<RunnerRule[]>([]);
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(async () => {
    try {
      setRunners(await listAll<Runner>('/runners'));
      setRules(await listAll<RunnerRule>('/runner-rules'));
      setError(null);
    } catch (e) {
      setError(e);
    }
  }, []);
  useEffect(() => void load(), [load]);
  const configure = can('configure');

  return (
    <main>
      <h1>Runners</h1>
      <ErrorText error={error} />
      {configure && (
        <JsonEditor label="New runner" title="New runner" initial={() => kNewRunner}
                    onSave={async (v) => { await post('/runners', v); await load(); }} />
      )}
      {runners && (
        <table class="list">
          <thead>
            <tr><th scope="col">Runner</th><th scope="col">Type</th><th scope="col">State storage</th><th scope="col">Description</th>{configure && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr>
          </thead>
          <tbody>
            {runners.map((r) => (
              <tr key={r.id}>
                <th scope="row">{r.id}</th>
                <td data-label="Type">{r.runner_configuration.type}</td>
                <td data-label="State storage">{r.state_storage_configuration?.type ?? '—'}</td>
                <td data-label="Description">{r.description}</td>
                {configure && (
                  <td>
                    <JsonEditor label={`Edit ${r.id}`} title={`Runner ${r.id}`} initial={() => editable(r)}
                                onSave={async (v) => { await put(`/runners/${r.id}`, v, r.version); await load(); }} />
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>Runner rules</h2>
      <p class="muted">Which runner serves a new environment: the rule that matches its project and type.</p>
      {configure && (
        <JsonEditor label="New rule" title="New runner rule" initial={() => kNewRule}
                    onSave={async (v) => { await post('/runner-rules', v); await load(); }} />
      )}
      <table class="list">
        <thead>
          <tr><th scope="col">Rule</th><th scope="col">Runner</th><th scope="col">Project</th><th scope="col">Environment type</th>{configure && <th scope="col"><span class="visually-hidden">Actions</span></th>}</tr>
        </thead>
        <tbody>
          {rules.map((r) => (
            <tr key={r.id}>
              <th scope="row">{r.id}</th>
              <td data-label="Runner">{r.runner_id}</td>
              <td data-label="Project">{r.project_id ?? <span class="muted">any</span>}</td>
              <td data-label="Environment type">{r.env_type_id ?? <span class="muted">any</span>}</td>
              {configure && (
                <td>
                  <JsonEditor label={`Edit ${r.id}`} title={`Rule ${r.id}`} initial={() => editable(r)}
                              onSave={async (v) => { await put(`/runner-rules/${r.id}`, v, r.version); await load(); }} />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </main>
  );
}
