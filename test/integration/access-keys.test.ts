// Service accounts as a person sets them up (docs/operations.md "Access and roles"): keys made by
// `npm run api-key`, their lines in MSGX_API_KEYS_FILE, the api and a status server (intake's)
// configured as in compose (development mode off, no shared token, reads closed, allowed hosts).
// A key rotated while requests flow loses none of them; a bad line is refused at start (exit 2,
// file and line named) and, on a reload, leaves the keys in force; Host and Origin allowlist.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metricValue, runCli, startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { openServices, resetPipeline, type TestServices } from '../support/services.ts';
import { testEnv } from '../support/env.ts';

const dir = mkdtempSync(join(tmpdir(), 'msgx-keys-'));
const KEYS = join(dir, 'api-keys');
const PROD = { MSGX_DEV_MODE: 'false', MSGX_API_TOKEN: '', MSGX_HTTP_ANONYMOUS_READS: '', MSGX_API_KEYS_FILE: KEYS, MSGX_HTTP_ALLOWED_HOSTS: 'api,intake' };
let s: TestServices;
let api: Proc;
let intake: Proc;
const procs: Proc[] = [];

/** `npm run api-key -- new <name> <role> --out <file>`: the key (from the file) and the printed line. */
async function makeKey(name: string, role: string): Promise<{ key: string; line: string; file: string }> {
  const file = join(dir, `${name}-${Date.now()}.key`);
  const r = await runCli('npm', ['run', '-s', 'api-key', '--', 'new', name, role, '--out', file], { ...process.env });
  expect(r.code, r.err).toBe(0);
  const key = readFileSync(file, 'utf8');
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(r.out).not.toContain(key);
  return { key, line: r.out.trim(), file };
}
const get = (p: Proc, path: string, key?: string, headers: Record<string, string> = {}) =>
  fetch(`http://127.0.0.1:${p.port}${path}`, { headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers }, signal: AbortSignal.timeout(5000) });

/** A GET with headers fetch will not send as given (Host): node:http. */
const raw = (p: Proc, path: string, key: string, headers: Record<string, string>) =>
  new Promise<number>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: p.port, path, agent: false, timeout: 5000, headers: { authorization: `Bearer ${key}`, ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end();
  });

let viewer: Awaited<ReturnType<typeof makeKey>>;
let operator: Awaited<ReturnType<typeof makeKey>>;

beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  viewer = await makeKey('prometheus', 'viewer');
  operator = await makeKey('ops-script', 'operator');
  // the hash line made by hand, as the docs show it, is the line the CLI printed
  const byHand = spawnSync('sh', ['-c', `echo "prometheus viewer $(sha256sum < '${viewer.file}' | cut -d' ' -f1)"`], { encoding: 'utf8' }).stdout.trim();
  expect(byHand).toBe(viewer.line);
  writeFileSync(KEYS, `# service accounts\n${viewer.line}\n${operator.line}\n`);
  api = startWorker('api', PROD);
  intake = startWorker('intake', { ...PROD, MSGX_HTTP_HOST: '0.0.0.0' }); // as in a container: the Host check holds there too
  procs.push(api, intake);
  await waitFor('api and intake up', async () => (await get(api, '/healthz')).ok && (await get(intake, '/healthz')).ok);
});
afterAll(async () => {
  await stopAll(procs);
  await s?.close();
});

describe('API keys', () => {
  it('a viewer key scrapes /metrics on every process and reads; /healthz says ok and names only without a key', async () => {
    for (const p of [api, intake]) {
      expect((await get(p, '/metrics')).status).toBe(401);
      const m = await get(p, '/metrics', viewer.key);
      expect(m.status).toBe(200);
      expect(await m.text()).toContain('msgx_http_refusals_total{status="401"}');
      const open = (await (await get(p, '/healthz')).json()) as Record<string, unknown>;
      expect(Object.keys(open).sort()).toEqual(['ok', 'process']);
      expect(Object.keys((await (await get(p, '/healthz', viewer.key)).json()) as object)).toContain('dependencies');
    }
    expect((await get(api, '/all/flights', viewer.key)).status).toBe(200);
    const skip = await fetch(`http://127.0.0.1:${api.port}/ops/dispatch-skip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${viewer.key}`, 'content-type': 'application/json' },
      body: '{"eventIds":[1]}',
    });
    expect(skip.status).toBe(403);
    const ok = await fetch(`http://127.0.0.1:${api.port}/ops/dispatch-skip`, {
      method: 'POST',
      headers: { authorization: `Bearer ${operator.key}`, 'content-type': 'application/json' },
      body: '{"eventIds":[1]}',
    });
    expect(ok.status).toBe(200);
  });

  it('Host and Origin: loopback and msgx.http.allowed-hosts names (any port) pass, others are refused on the api and the status server (bound to 0.0.0.0)', async () => {
    for (const p of [api, intake]) {
      expect(await raw(p, '/metrics', viewer.key, { host: `${p.name}:${p.port}` })).toBe(200);
      expect(await raw(p, '/metrics', viewer.key, { host: `localhost:${p.port}` })).toBe(200);
      expect(await raw(p, '/metrics', viewer.key, { host: 'attacker.example' })).toBe(400);
      expect(await raw(p, '/metrics', viewer.key, { origin: 'http://attacker.example' })).toBe(403);
      expect(await raw(p, '/metrics', viewer.key, { origin: 'http://api:8080' })).toBe(200);
    }
  });

  it('a key rotated while requests flow: none of them is refused; then the old key is', async () => {
    const next = await makeKey('prometheus', 'viewer');
    let current = viewer.key;
    const statuses: number[] = [];
    let flowing = true;
    const flow = (async () => {
      while (flowing) {
        statuses.push((await get(statuses.length % 2 ? api : intake, '/metrics', current)).status);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    writeFileSync(KEYS, `${viewer.line}\n${next.line}\n${operator.line}\n`); // 1. the new key beside the old
    await waitFor('both processes take the new key', async () => (await get(api, '/metrics', next.key)).ok && (await get(intake, '/metrics', next.key)).ok, 10_000, 50);
    current = next.key; // 2. the client moves to it
    await new Promise((r) => setTimeout(r, 300));
    writeFileSync(KEYS, `${next.line}\n${operator.line}\n`); // 3. the old line goes
    await waitFor('the old key refused', async () => (await get(api, '/metrics', viewer.key)).status === 401 && (await get(intake, '/metrics', viewer.key)).status === 401, 10_000, 50);
    await new Promise((r) => setTimeout(r, 300));
    flowing = false;
    await flow;
    expect(statuses.length).toBeGreaterThan(50);
    expect(statuses.filter((x) => x !== 200)).toEqual([]);
    expect(api.logs.some((l) => l.includes('api keys: file changed, keys reloaded'))).toBe(true);
    viewer = next;
  });

  it('a bad line on a reload: refused whole, the keys in force stay, counted and logged with file and line', async () => {
    const before = (await metricValue(api, 'msgx_api_keys_file_refused_total')) ?? 0; // (anonymous reads are closed: metricValue sends no key)
    expect(before).toBe(0);
    writeFileSync(KEYS, `${viewer.line}\nbroken-line operator\n`);
    await waitFor('the refusal logged', () => api.logs.some((l) => l.includes('api keys: the changed file is refused') && l.includes(`${KEYS}:2`)), 10_000, 50);
    expect((await get(api, '/metrics', viewer.key)).status).toBe(200);
    expect((await get(api, '/ops/me', operator.key)).status).toBe(200); // the old set: the operator's line is still in force
    const text = await (await get(api, '/metrics', viewer.key)).text();
    expect(text).toMatch(/^msgx_api_keys_file_refused_total 1$/m);
    writeFileSync(KEYS, `${viewer.line}\n${operator.line}\n`);
  });

  it('a bad line at start: the process does not start (exit 2), naming the file and the line', async () => {
    const bad = join(dir, 'bad-keys');
    writeFileSync(bad, `${viewer.line}\nprometheus viewer msgxk_the-key-itself\n`);
    const r = await runCli(process.execPath, ['workers/intake.ts'], { ...process.env, ...testEnv({ ...PROD, MSGX_API_KEYS_FILE: bad, MSGX_HTTP_PORT_INTAKE: '0' }) });
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${bad}:2: the third word is not a SHA-256 in hex`);
  });
});
