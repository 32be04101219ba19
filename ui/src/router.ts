// Pages are addressed by the URL's fragment (/ui/#/deployments/ID), so that berthd serves one
// index.html and a reload lands on the same page.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'overview' }
  | { page: 'deployment'; id: string }
  | { page: 'environment'; project: string; env: string }
  | { page: 'runners' }
  | { page: 'not-found'; hash: string };

const kId = '([a-z0-9][-a-z0-9]*)';

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '') || '/';
  if (path === '/') return { page: 'overview' };
  const deployment = /^\/deployments\/([A-Za-z0-9_-]+)$/.exec(path);
  if (deployment) return { page: 'deployment', id: deployment[1] };
  const environment = new RegExp(`^/envs/${kId}/${kId}$`).exec(path);
  if (environment) return { page: 'environment', project: environment[1], env: environment[2] };
  if (path === '/runners') return { page: 'runners' };
  return { page: 'not-found', hash: path };
}

export function href(route: Route): string {
  switch (route.page) {
    case 'overview':
      return '#/';
    case 'deployment':
      return `#/deployments/${encodeURIComponent(route.id)}`;
    case 'environment':
      return `#/envs/${route.project}/${route.env}`;
    case 'runners':
      return '#/runners';
    case 'not-found':
      return `#${route.hash}`;
  }
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  return route;
}
