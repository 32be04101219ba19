import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';

import { kLoggedOutEvent, logOut, resumeSession, type Session } from './api';
import { DeploymentPage } from './pages/deployment';
import { EnvironmentPage } from './pages/environment';
import { LoginPage } from './pages/login';
import { OverviewPage } from './pages/overview';
import { RunnersPage } from './pages/runners';
import { href, useRoute } from './router';
import './style.css';

function Pages() {
  const route = useRoute();
  switch (route.page) {
    case 'overview':
      return <OverviewPage />;
    case 'deployment':
      return <DeploymentPage id={route.id} />;
    case 'environment':
      return <EnvironmentPage project={route.project} env={route.env} />;
    case 'runners':
      return <RunnersPage />;
    case 'not-found':
      return <main><h1>Not found</h1><p><a href={href({ page: 'overview' })}>Environments</a></p></main>;
  }
}

function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const onLoginPage = location.pathname === '/ui/login';
  useEffect(() => {
    if (onLoginPage) setSession(null);
    else resumeSession().then(setSession, () => setSession(null));
    const loggedOut = () => setSession(null);
    addEventListener(kLoggedOutEvent, loggedOut);
    return () => removeEventListener(kLoggedOutEvent, loggedOut);
  }, []);
  if (session === undefined) return <p class="muted">Loading…</p>;
  if (!session) return <LoginPage onLoggedIn={setSession} />;
  return (
    <>
      <header class="topbar">
        <a class="brand" href={href({ page: 'overview' })}>berth</a>
        <nav aria-label="Pages">
          <a href={href({ page: 'overview' })}>Environments</a>
          <a href={href({ page: 'runners' })}>Runners</a>
        </nav>
        <span class="muted">{session.org} · {session.scopes.join(', ')}</span>
        <button class="button" onClick={() => void logOut().finally(() => setSession(null))}>Log out</button>
      </header>
      <Pages />
    </>
  );
}

render(<App />, document.getElementById('app')!);
