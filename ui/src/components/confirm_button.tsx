import type { ComponentChildren } from 'preact';
import { useId, useRef } from 'preact/hooks';

import { useDialogAction } from './dialog_action';
import { ErrorText } from './error_text';

// A button whose action runs only once the user confirms it in a modal dialog (the native
// <dialog>: focus is trapped and Escape closes it, with no script of ours).
export function ConfirmButton(props: {
  label: string;
  title: string;
  children: ComponentChildren;
  confirmLabel: string;
  danger?: boolean;
  onConfirm: () => Promise<void>;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const { busy, error, run } = useDialogAction(dialog);
  const confirm = () => run(props.onConfirm);
  return (
    <>
      <button class={props.danger ? 'button danger' : 'button primary'} onClick={() => dialog.current?.showModal()}>
        {props.label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <h2 id={titleId}>{props.title}</h2>
        {props.children}
        <ErrorText error={error} />
        <div class="dialog-actions">
          <button class="button" onClick={() => dialog.current?.close()} disabled={busy}>
            Back
          </button>
          <button class={props.danger ? 'button danger' : 'button primary'} onClick={confirm} disabled={busy}>
            {props.confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}
