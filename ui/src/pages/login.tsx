import { useEffect, useState } from 'preact/hooks';

import { logIn, rememberedOrg, type Session } from '../api';

// /ui/login#org=ORG&code=CODE (what `berth ui` prints) asks for one click before it logs in, so
// that a link someone else sent (their code, their session) or a link preview spends nothing by
// being opened; the code leaves the address bar at once. Without a code, a token pasted here
// opens the session. Either way the browser keeps only the HttpOnly cookie, never the token.
export function LoginPage({ onLoggedIn }: { onLoggedIn: (session: Session) => void }) {
  const fragment = new URLSearchParams(location.hash.replace(/^#/, ''));
  const [org, setOrg] = useState(fragment.get('org') ?? rememberedOrg() ?? 'default');
  const [code, setCode] = useState(fragment.get('code') ?? '');
  const [token, setToken] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (bearer: string, forOrg: string) => {
    setBusy(true);
    setError('');
    try {
      const session = await logIn(forOrg, bearer);
      history.replaceState(null, '', '/ui/#/');
      onLoggedIn(session);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
      setCode(''); // spent or refused: the form is what is left
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    history.replaceState(null, '', '/ui/login'); // the code is kept in this page only
  }, []);

  if (code) {
    return (
      <main class="login">
        <h1>berth</h1>
        <form onSubmit={(e) => { e.preventDefault(); void submit(code, org); }}>
          <p>This one-time link logs you in to organization <strong>{org}</strong>. Open it only
            if you ran <code>berth ui</code> yourself.</p>
          <button class="button primary" type="submit" disabled={busy}>Log in to {org}</button>
        </form>
      </main>
    );
  }

  return (
    <main class="login">
      <h1>berth</h1>
      <form onSubmit={(e) => { e.preventDefault(); void submit(token, org); }}>
        <p>Log in with an API token, or run <code>berth ui</code> for a one-time link.</p>
        <label>
          Organization
          <input name="org" value={org} required autocomplete="organization"
                 onInput={(e) => setOrg((e.target as HTMLInputElement).value)} />
        </label>
        <label>
          API token
          <input name="token" type="password" value={token} required autocomplete="off"
                 onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        </label>
        {error && <p class="error" role="alert">{error}</p>}
        <button class="button primary" type="submit" disabled={busy}>Log in</button>
      </form>
    </main>
  );
}
