import { useState } from 'preact/hooks';
import type { RefObject } from 'preact';

// What a dialog whose button calls the API shares: busy while it runs, the API's refusal shown
// in the dialog (which stays open to fix it), closed once the call succeeds.
export function useDialogAction(dialog: RefObject<HTMLDialogElement>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await action();
      dialog.current?.close();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}
