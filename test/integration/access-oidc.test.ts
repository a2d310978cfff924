// Sign-in tokens against a real OpenID provider (oidc-provider, started by this file:
// test/support/oidc.ts), through the real api process configured as in production (development
// mode off, no shared token, reads closed): who may do what, the attacks on JWT verification, the
// JWKS refreshed when the provider rotates its key (and not hammered by unknown kids), and the
// audit rows that name the person, for an action and for a refusal.
import { createHmac, createPublicKey } from 'node:crypto';
import { request } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, importJWK, type JWK } from 'jose';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JWKS_COOLDOWN_MS } from '../../lib/access/oidc.ts';
import { AUDIENCE, OTHER_AUDIENCE, productionApiEnv, signingKey, startIdp, type TestIdp } from '../support/oidc.ts';
import { freePort } from '../support/ports.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, resetPipeline, type TestServices } from '../support/services.ts';

let s: TestServices;
let idp: TestIdp;
let api: Proc;
let k1: JWK;
const procs: Proc[] = [];

let apiPort: number;
/** One request; `from` is the client address (the api limits failed authentications per address: each describe has its own). */
const call = (path: string, token: string | null, body?: unknown, from = '127.0.0.1') =>
  new Promise<{ status: number; text: string; json: Record<string, unknown> }>((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port: apiPort,
        path,
        method: data ? 'POST' : 'GET',
        localAddress: from,
        agent: false,
        timeout: 10_000,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(data ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)) } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text, json: text.startsWith('{') ? JSON.parse(text) : {} }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${path}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(data);
  });
const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
/** The payload of a real token, re-signed by hand with a header of the attacker's choice. */
const forged = (token: string, header: object, sign: (input: string) => string) => {
  const payload = token.split('.')[1];
  const input = `${b64(header)}.${payload}`;
  return `${input}.${sign(input)}`;
};
const auditRows = async (where: (r: Record<string, unknown>) => boolean) =>
  (await sql<Record<string, unknown>>`select subject, subject_name, role, via, method, route, action, status, outcome, touched, process from access_audit order by id`.execute(s.db)).rows.filter(
    where,
  );

beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  await sql`truncate access_audit`.execute(s.db);
  await sql`insert into proc_state (msg_id, state, reason, reason_class, kind, enqueued_at, terminal_at, updated_at)
            values (7001, 'DEAD', 'EXHAUSTED(INTERNAL): x', 'EXHAUSTED', 'FLOP/GATE', now(), now(), now())`.execute(s.db);
  k1 = await signingKey('k1');
  apiPort = await freePort();
  idp = await startIdp({ keys: [k1], consoleOrigins: [`http://127.0.0.1:${apiPort}`] });
  const keys = join(mkdtempSync(join(tmpdir(), 'msgx-oidc-')), 'api-keys');
  writeFileSync(keys, '# no keys: people sign in\n');
  api = startWorker('api', productionApiEnv(idp, keys, { MSGX_OIDC_CLOCK_SKEW: '1s', MSGX_HTTP_PORT_API: String(apiPort) }));
  procs.push(api);
  await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${apiPort}/healthz`)).ok);
});
afterAll(async () => {
  await stopAll(procs);
  await idp?.stop();
  await s?.close();
});

describe('who may do what, with tokens of the identity provider', () => {
  it('a viewer reads (also /metrics), an operator acts, a token without a known role reads nothing; no token: 401', async () => {
    const viewer = await idp.serviceToken('svc-viewer');
    expect((await call('/all/flights', viewer)).status).toBe(200);
    expect((await call('/metrics', viewer)).text).toContain('msgx_http_refusals_total');
    expect((await call('/ops/me', viewer)).json).toMatchObject({ via: 'oidc', subject: 'svc-viewer', name: 'Svc viewer', role: 'viewer' });
    expect((await call('/all/flights', null)).status).toBe(401);
    expect((await call('/all/flights', await idp.serviceToken('svc-nobody'))).json).toMatchObject({
      error: 'forbidden',
      reason: 'GET /all/flights needs the viewer role; Svc nobody has no role this gateway knows',
    });
    const operator = await idp.serviceToken('svc-operator');
    expect((await call('/ops/replay', operator, { ids: [424242] })).status).toBe(200);
    expect((await call('/cminmsgs/send', operator, {})).status).toBe(403); // injection is an admin's
  });

  it('a person signed in (authorization code + PKCE): a viewer refused a skip (403, audited), an operator replays (audited with the IDs)', async () => {
    const redirect = `http://127.0.0.1:${apiPort}/ops`;
    const alice = await idp.userToken('alice-viewer', redirect);
    const skip = await call('/ops/dispatch-skip', alice, { eventIds: [99] });
    expect(skip.status).toBe(403);
    expect(skip.json.reason).toBe('POST /ops/dispatch-skip needs the operator role; Alice viewer has viewer');
    const bob = await idp.userToken('bob-operator', redirect);
    const replay = await call('/ops/replay', bob, { ids: [7001] });
    expect(replay.json).toMatchObject({ replayed: [7001] });
    const refused = await waitFor('the refusal row', async () => (await auditRows((r) => r.subject === 'alice-viewer' && r.route === '/ops/dispatch-skip'))[0]);
    const done = await waitFor('the replay row', async () => (await auditRows((r) => r.subject === 'bob-operator' && r.action === 'replay'))[0]);
    console.log('audit row, refused skip:', JSON.stringify(refused));
    console.log('audit row, replay:', JSON.stringify(done));
    expect(refused).toMatchObject({ subject_name: 'Alice viewer', role: 'viewer', via: 'oidc', method: 'POST', action: 'refused', status: 403, outcome: 'refused', process: 'api' });
    expect(done).toMatchObject({ subject_name: 'Bob operator', role: 'operator', via: 'oidc', method: 'POST', route: '/ops/replay', status: 200, outcome: 'done', touched: { msgIds: [7001] } });
    // and the log line of each
    await waitFor('audit log lines', () => api.logs.some((l) => l.includes('"audit":true') && l.includes('"who":"oidc:bob-operator"') && l.includes('"name":"Bob operator"')));
  });
});

describe('tokens the api refuses (401 with the reason)', () => {
  it('an expired token (past exp plus the clock skew)', async () => {
    const t = await idp.serviceToken('svc-short'); // valid 2 s
    expect((await call('/all/flights', t)).status).toBe(403); // (no role, but accepted as a token)
    const exp = JSON.parse(Buffer.from(t.split('.')[1], 'base64url').toString()).exp as number;
    await new Promise((r) => setTimeout(r, Math.max(0, exp * 1000 + 1000 - Date.now()) + 600));
    expect((await call('/all/flights', t)).json).toMatchObject({ error: 'unauthorized', reason: 'the token has expired' });
  });

  it('a token for another audience', async () => {
    expect((await call('/all/flights', await idp.serviceToken('svc-viewer', OTHER_AUDIENCE))).json.reason).toBe('the token is for another audience');
  });

  it('a token of another issuer, signed with the same key', async () => {
    const other = await startIdp({ keys: [k1] });
    try {
      expect((await call('/all/flights', await other.serviceToken('svc-viewer'))).json.reason).toBe('the token is from another issuer');
    } finally {
      await other.stop();
    }
  });

  it('alg none, and an HMAC signed with the RSA public key (the algorithm allowlist refuses both before any key is looked at)', async () => {
    const real = await idp.serviceToken('svc-admin');
    expect((await call('/all/flights', real)).status).toBe(200);
    const none = forged(real, { alg: 'none', typ: 'JWT', kid: 'k1' }, () => '');
    const pem = createPublicKey({ key: k1, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    const hmac = forged(real, { alg: 'HS256', typ: 'JWT', kid: 'k1' }, (input) => createHmac('sha256', pem).update(input).digest('base64url'));
    for (const t of [none, hmac]) expect((await call('/all/flights', t, undefined, '127.0.0.4')).json).toMatchObject({ error: 'unauthorized', reason: "the token's algorithm is not allowed" });
  });

  it('a key the provider never published: 401; a flood of such kids fetches the JWKS at most once', async () => {
    const stranger = await signingKey('k-stranger');
    const now = Math.floor(Date.now() / 1000);
    const t = await new SignJWT({ groups: ['gw-admins'] })
      .setProtectedHeader({ alg: 'RS256', kid: 'k-stranger' })
      .setIssuer(idp.issuer)
      .setAudience(AUDIENCE)
      .setSubject('mallory')
      .setIssuedAt(now)
      .setExpirationTime(now + 300)
      .sign(await importJWK(stranger, 'RS256'));
    const before = idp.jwksFetches();
    for (let i = 0; i < 15; i++) expect((await call('/all/flights', t, undefined, '127.0.0.2')).json.reason).toBe("the token's signing key (kid) is not among the issuer's keys");
    expect(idp.jwksFetches() - before).toBeLessThanOrEqual(1);
  });
});

describe('the provider rotates its signing key', () => {
  it('a token of the new key: the JWKS is fetched again (at most once per cooldown) and the key found', async () => {
    const port = idp.port;
    await idp.stop();
    const k2 = await signingKey('k2');
    idp = await startIdp({ keys: [k2, k1], port }); // k2 signs now; the api has only k1 cached
    const t = await idp.serviceToken('svc-viewer');
    expect(JSON.parse(Buffer.from(t.split('.')[0], 'base64url').toString()).kid).toBe('k2');
    const first: number[] = [];
    for (let i = 0; i < 10; i++) first.push((await call('/all/flights', t, undefined, '127.0.0.3')).status);
    expect(new Set(first).size === 1 && [200, 401].includes(first[0])).toBe(true); // found at once, or the last fetch was within the cooldown
    await new Promise((r) => setTimeout(r, JWKS_COOLDOWN_MS + 500));
    expect((await call('/all/flights', t)).status).toBe(200);
    expect(idp.jwksFetches()).toBe(1);
  }, 30_000);
});
