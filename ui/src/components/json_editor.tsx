import { useId, useRef, useState } from 'preact/hooks';

import { useDialogAction } from './dialog_action';
import { ErrorText } from './error_text';

// A dialog that edits an API object as JSON and saves it through the API, which checks it: the
// API's refusal is shown as it is, field by field, and the dialog stays open to fix it.
export function JsonEditor(props: {
  label: string;
  title: string;
  initial: () => unknown;
  onSave: (value: unknown) => Promise<void>;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [text, setText] = useState('');
  const { busy, error, setError, run } = useDialogAction(dialog);
  const open = () => {
    setText(JSON.stringify(props.initial(), null, 2));
    setError(null);
    dialog.current?.showModal();
  };
  const save = async () => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      setError(new Error(`not JSON: ${e instanceof Error ? e.message : e}`));
      return;
    }
    await run(() => props.onSave(value));
  };
  return (
    <>
      <button class="button" onClick={open}>{props.label}</button>
      <dialog ref={dialog} aria-labelledby={titleId} class="wide">
        <h2 id={titleId}>{props.title}</h2>
        <label>
          JSON, as the API takes it (docs/api.md)
          <textarea rows={18} spellcheck={false} value={text}
                    onInput={(e) => setText((e.target as HTMLTextAreaElement).value)} />
        </label>
        <ErrorText error={error} />
        <div class="dialog-actions">
          <button class="button" onClick={() => dialog.current?.close()} disabled={busy}>Back</button>
          <button class="button primary" onClick={save} disabled={busy}>Save</button>
        </div>
      </dialog>
    </>
  );
}
