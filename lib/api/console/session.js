// Signing in (docs/operations.md "The ops console"): with the identity provider by authorization
// code + PKCE (S256), or in development mode with the shared token. The tokens live in this
// module's memory only — never localStorage, sessionStorage, a cookie or the URL: a reload signs
// in again (the provider's own session makes that one redirect). Only the PKCE verifier and state
// of a sign-in under way wait in sessionStorage across the provider's redirect, and are removed
// when it comes back. Every call of the api carries the access token; the server decides.
import { nowMs } from './clock.js';

const mem = { access: null, refresh: null, idToken: null, expiresAt: 0, me: null };
let cfg = { tokenSignIn: false, oidc: null };
const PENDING = 'msgx-sign-in';
const redirectUri = () => `${location.origin}/ops`;
const b64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const random = (n) => b64url(crypto.getRandomValues(new Uint8Array(n)));

export const config = () => cfg;
export const signedIn = () => mem.access !== null;
/** Who is signed in (GET /ops/me): name, role and the routes the role may call. */
export const me = () => mem.me;
/** Whether the signed-in role may call this route (`POST /ops/replay`); the server checks again. */
export const may = (route) => Boolean(mem.me?.routes.includes(route));

export async function loadConfig() {
  const r = await fetch('/ops/config');
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j.reason || `HTTP ${r.status}`);
  cfg = j;
  return cfg;
}

/** To the provider's sign-in page (the browser leaves this page). */
export async function signIn() {
  const o = cfg.oidc;
  const verifier = random(32);
  const state = random(16);
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state }));
  const q = { response_type: 'code', client_id: o.clientId, redirect_uri: redirectUri(), scope: o.scopes, state, code_challenge: challenge, code_challenge_method: 'S256' };
  location.assign(`${o.authorizationEndpoint}?${new URLSearchParams(o.resource ? { ...q, resource: o.resource } : q)}`);
}

async function tokenRequest(params) {
  const o = cfg.oidc;
  const body = new URLSearchParams({ client_id: o.clientId, ...(o.resource ? { resource: o.resource } : {}), ...params });
  const r = await fetch(o.tokenEndpoint, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body });
  const j = await r.json().catch(() => ({}));
  if (!r.ok || !j.access_token) throw new Error(`the identity provider refused: ${j.error_description || j.error || `HTTP ${r.status}`}`);
  mem.access = j.access_token;
  mem.refresh = j.refresh_token || mem.refresh;
  mem.idToken = j.id_token || mem.idToken;
  mem.expiresAt = nowMs() + (Number(j.expires_in) || 300) * 1000;
}

/** Back from the provider (?code=&state=): the code exchanged for tokens. False when this load is not such a return. */
export async function completeSignIn() {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return false;
  history.replaceState(null, '', '/ops'); // the code leaves the address bar and the history
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || 'null');
  sessionStorage.removeItem(PENDING);
  if (q.has('error')) throw new Error(`sign-in refused: ${q.get('error_description') || q.get('error')}`);
  if (!pending || pending.state !== q.get('state')) throw new Error('the sign-in answer does not belong to a sign-in from this tab; sign in again');
  await tokenRequest({ grant_type: 'authorization_code', code: q.get('code'), redirect_uri: redirectUri(), code_verifier: pending.verifier });
  return true;
}

/** Development mode: the shared token, in memory like a signed-in token. */
export function useToken(token) {
  Object.assign(mem, { access: token, refresh: null, idToken: null, expiresAt: Infinity });
}

/** Forget every token here; with a provider, end its session too (the browser leaves this page). */
export function signOut() {
  const hint = mem.idToken;
  Object.assign(mem, { access: null, refresh: null, idToken: null, expiresAt: 0, me: null });
  const end = cfg.oidc?.endSessionEndpoint;
  if (end && hint) location.assign(`${end}?${new URLSearchParams({ id_token_hint: hint, post_logout_redirect_uri: redirectUri(), client_id: cfg.oidc.clientId })}`);
}

/** GET or POST (JSON) to the api with the token; an expiring token is refreshed first when the provider gave a refresh token. */
export async function api(path, body) {
  if (mem.refresh && mem.expiresAt - nowMs() < 30_000) await tokenRequest({ grant_type: 'refresh_token', refresh_token: mem.refresh }).catch(() => {});
  const r = await fetch(path, {
    method: body ? 'POST' : 'GET',
    headers: { authorization: `Bearer ${mem.access || ''}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw Object.assign(new Error(j.reason || j.message || `HTTP ${r.status}`), { status: r.status, body: j });
  return j;
}

/** Who the api says is signed in; throws (401) when the token is refused. */
export async function loadMe() {
  mem.me = await api('/ops/me');
  return mem.me;
}
