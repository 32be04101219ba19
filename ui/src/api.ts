// Every call the dashboard makes goes through here. The session's secret is an HttpOnly cookie
// the browser sends by itself (same origin); no script holds it. Every change carries the
// session's CSRF token, which berthd derives from the secret and a foreign page cannot read.

export interface FieldError {
  path: string;
  rule: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly kind: string,
    message: string,
    readonly fields: FieldError[] = [],
  ) {
    super(message);
  }
}

export interface Session {
  id: string;
  org: string;
  scopes: string[];
  expires_at: string;
  csrf_token: string;
}

const kOrgKey = 'berth.org';
export const kLoggedOutEvent = 'berth:logged-out';
let session: Session | null = null;

export function rememberedOrg(): string | null {
  return localStorage.getItem(kOrgKey);
}

export function currentSession(): Session | null {
  return session;
}

// Whether the session's token allows a scope (docs/api.md, "Tokens"): admin allows all.
export function can(scope: 'read' | 'deploy' | 'approve' | 'configure' | 'admin'): boolean {
  if (!session) return false;
  return scope === 'read' || session.scopes.includes(scope) || session.scopes.includes('admin');
}

async function failure(response: Response): Promise<ApiError> {
  try {
    const body = await response.json();
    const e = body?.error ?? {};
    return new ApiError(response.status, e.kind ?? 'Unknown', e.message ?? response.statusText,
                        Array.isArray(e.fields) ? e.fields : []);
  } catch {
    return new ApiError(response.status, 'Unknown', `${response.status} ${response.statusText}`);
  }
}

function orgPath(path: string): string {
  if (!session) throw new ApiError(401, 'Unauthenticated', 'not logged in');
  return `/orgs/${encodeURIComponent(session.org)}${path}`;
}

export interface SendOptions {
  body?: unknown; // sent as JSON
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

// A request to /orgs/{org}{path} as the session.
export async function send(method: string, path: string,
                           { body, signal, headers: extra }: SendOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...extra };
  if (method !== 'GET' && method !== 'HEAD' && session) headers['X-Berth-CSRF'] = session.csrf_token;
  let payload: string | undefined;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const response = await fetch(orgPath(path), {
    method,
    headers,
    body: payload,
    credentials: 'same-origin',
    signal,
  });
  if (response.status === 401 && session) {
    // The session expired or was revoked: the app goes back to its login page.
    session = null;
    dispatchEvent(new Event(kLoggedOutEvent));
  }
  if (!response.ok) throw await failure(response);
  return response;
}

export async function get<T>(path: string): Promise<T> {
  return (await send('GET', path)).json() as Promise<T>;
}

export async function post<T>(path: string, body?: unknown): Promise<T> {
  const response = await send('POST', path, { body });
  return (response.status === 204 ? undefined : await response.json()) as T;
}

// Replaces an object only if it is still at version (If-Match): another edit is not lost.
export async function put<T>(path: string, body: unknown, version: number): Promise<T> {
  return (await send('PUT', path, { body, headers: { 'If-Match': `"${version}"` } })).json() as Promise<T>;
}

// Every page of a list route (`items`, `next`).
export async function listAll<T>(path: string): Promise<T[]> {
  const items: T[] = [];
  let after = '';
  for (;;) {
    const separator = path.includes('?') ? '&' : '?';
    const page = await get<{ items: T[]; next?: string }>(
      `${path}${separator}limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`);
    items.push(...page.items);
    if (!page.next) return items;
    after = page.next;
  }
}

// Opens a session with a bearer: an API token, or a one-time login code.
export async function logIn(org: string, bearer: string): Promise<Session> {
  const response = await fetch(`/orgs/${encodeURIComponent(org)}/sessions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${bearer}` },
    credentials: 'same-origin',
  });
  if (!response.ok) throw await failure(response);
  session = (await response.json()) as Session;
  localStorage.setItem(kOrgKey, org);
  return session;
}

// The session of this browser, if its cookie is still good (a page loaded afresh).
export async function resumeSession(): Promise<Session | null> {
  const org = rememberedOrg();
  if (!org) return null;
  const response = await fetch(`/orgs/${encodeURIComponent(org)}/session`, {
    credentials: 'same-origin',
  });
  if (response.status === 401) return null;
  if (!response.ok) throw await failure(response);
  session = (await response.json()) as Session;
  return session;
}

export async function logOut(): Promise<void> {
  try {
    await send('DELETE', '/session');
  } finally {
    session = null;
  }
}
