// api.js -- the REST API as the console calls it: the token from
// sessionStorage as a bearer, problem documents turned into errors that
// keep their code and failing fields.

const TOKEN_KEY = 'cairn.token';

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function signIn(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  caller = null;
}

/* The signed-in token (GET /v1/tokens/current): its name and scope, asked
 * once per page load. */
let caller = null;

export async function identity() {
  if (!caller) caller = await api('GET', '/v1/tokens/current');
  return caller;
}

/** Whether the signed-in token may change things (an admin token); the
 *  pages offer no action otherwise. */
export function canChange() {
  return caller !== null && caller.scope === 'admin';
}

/** Why an action is not offered, for a read token. */
export const READ_ONLY = 'This token has read scope: sign in with an admin token to make changes.';

/** An API refusal: status, code (VALIDATION_FAILED, ...), detail, and
 *  errors [{field, message}] when the body had failing fields. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.code = problem.code || '';
    this.errors = problem.errors || [];
  }
}

/** Call the API; resolves to the JSON body (null for 204), rejects with ApiError. */
export async function api(method, path, body) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  if (res.status === 204) return null;
  const text = await res.text();
  let doc = null;
  try {
    doc = text ? JSON.parse(text) : null;
  } catch {
    doc = { detail: text };
  }
  if (!res.ok) throw new ApiError(res.status, doc || {});
  return doc;
}

/** Every item of a paged list (GET path?page_size=500, following
 *  next_page_token), as one array; key names the list's member. */
export async function getAll(path, key, query = {}) {
  const items = [];
  let pageToken;
  do {
    const page = await get(path, { ...query, page_size: 500, page_token: pageToken });
    items.push(...page[key]);
    pageToken = page.next_page_token;
  } while (pageToken);
  return items;
}

/** GET with query parameters (undefined or '' ones left out). */
export function get(path, query = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') q.set(k, v);
  const s = q.toString();
  return api('GET', s ? `${path}?${s}` : path);
}
