import { ApiError } from '../api';

// An API error as the API says it: its message, and each field it names with the rule broken.
export function ErrorText({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const fields = error instanceof ApiError ? error.fields : [];
  return (
    <div class="error" role="alert">
      <p>{message}</p>
      {fields.length > 0 && (
        <ul class="field-errors">
          {fields.map((f) => (
            <li><code>{f.path}</code>: {f.rule}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
