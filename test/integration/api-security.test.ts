// API hardening and the access rules, through real HTTP against the real api process,
// configured as in production: development mode off, no shared token, an API key file, reads
// closed to anonymous callers. Every hostile request of the issue is answered 400/401/413 as
// intended, the api's /healthz stays under 100 ms while a hostile body is handled, operator
// actions and refusals leave one structured audit line, and no secret reaches a client or a log.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServices, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { TEST_INBOX_URL, testEnv } from '../support/env.ts';
import { redactUrl } from '../../lib/core/config.ts';
import { keyLine, newKey } from '../../lib/access/keys.ts';

const TOKEN = newKey(); // an admin's API key
const KEYS = join(mkdtempSync(join(tmpdir(), 'msgx-security-')), 'api-keys');
writeFileSync(KEYS, `${keyLine('security-test', 'admin', TOKEN)}\n`);
const PROD = { MSGX_DEV_MODE: 'false', MSGX_API_TOKEN: '', MSGX_API_KEYS_FILE: KEYS, MSGX_HTTP_ANONYMOUS_READS: '' };
const AUTH = { authorization: `Bearer ${TOKEN}` };

let s: TestServices;
let api: Proc;
const procs: Proc[] = [];

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown>;
  ms: number;
}

interface Req {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send only this many bytes of the body (the rest never comes). */
  partial?: number;
  /** Declared Content-Length (defaults to the body's length). */
  length?: number;
  localAddress?: string;
  port?: number;
}

/** One request with node:http (an early answer wins over a body the server refused to read). */
function http(r: Req): Promise<Answer> {
  const body = r.body === undefined ? undefined : Buffer.isBuffer(r.body) ? r.body : Buffer.from(r.body, 'utf8');
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    let answered = false;
    const headers: Record<string, string> = { ...(body ? { 'content-length': String(r.length ?? body.length) } : {}), ...r.headers };
    const req = request({ host: '127.0.0.1', port: r.port ?? api.port, path: r.path, method: r.method ?? (body ? 'POST' : 'GET'), headers, localAddress: r.localAddress, agent: false }, (res) => {
      answered = true;
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json, ms: performance.now() - t0 });
        if (!req.writableFinished) req.destroy();
      });
      res.on('error', reject);
    });
    req.on('error', (e) => {
      if (!answered) setTimeout(() => !answered && reject(e), 2000);
    });
    if (!body) return void req.end();
    if (r.partial !== undefined) return void req.write(body.subarray(0, r.partial));
    if ((r.length ?? body.length) > body.length) return void req.write(body);
    if (body.length <= 1_000_000) return void req.end(body);
    // A big body: headers first, and the body only if no answer came within a second (as a
    // client with `Expect: 100-continue` would). A server that answers early closes the
    // connection (Node does when the body was not read), and a body written meanwhile would make
    // our write fail (EPIPE) and lose that answer. Then in pieces, stopping once answered.
    req.flushHeaders();
    void (async () => {
      for (let waited = 0; waited < 1000 && !answered; waited += 20) await new Promise((r) => setTimeout(r, 20));
      for (let at = 0; at < body.length && !answered && !req.destroyed; at += 256 * 1024) {
        if (!req.write(body.subarray(at, at + 256 * 1024))) await new Promise((r) => req.once('drain', r));
      }
      if (!answered) req.end();
    })().catch(() => {});
  });
}

const json = (path: string, body: unknown, headers: Record<string, string> = AUTH, extra: Partial<Req> = {}) =>
  http({ path, body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers }, ...extra });
const xml = (body: string | Buffer, headers: Record<string, string> = AUTH, extra: Partial<Req> = {}) =>
  http({ path: '/cminmsgs/send', body, headers: { 'content-type': 'application/xml', ...headers }, ...extra });

/**
 * Poll the api's /healthz every 20 ms while `work` runs; the slowest answer in ms. The poller is
 * a separate process, so that the test's own work (writing 60 MB of bodies) does not count.
 */
async function slowestHealthz(work: Promise<unknown>, port = api.port): Promise<{ worst: number; n: number; all: number[] }> {
  const poller = spawn(
    process.execPath,
    [
      '-e',
      `const http = require('node:http');
       const once = () => { const t0 = performance.now(); http.get({ host: '127.0.0.1', port: ${port}, path: '/healthz', agent: false }, (res) => {
         res.resume(); res.on('end', () => { console.log(res.statusCode + ' ' + Math.round(performance.now() - t0)); setTimeout(once, 20); });
       }).on('error', (e) => { console.log('0 ' + e.message); setTimeout(once, 20); }); };
       once();`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  poller.stdout.on('data', (b) => (out += b));
  await waitFor('poller running', () => out.includes('\n'));
  const from = out.length;
  await work.catch(() => {});
  poller.kill('SIGKILL');
  const lines = out.slice(from).split('\n').filter(Boolean);
  for (const l of lines) expect(l).toMatch(/^200 /);
  const all = lines.map((l) => Number(l.split(' ')[1]));
  await work;
  return { worst: Math.max(0, ...all), n: all.length, all };
}

/** msgx_http_refusals_total of the api by status: what the gate refused. */
async function refusals(): Promise<Record<401 | 429, number>> {
  const text = (await http({ path: '/metrics', headers: AUTH })).text;
  const of = (status: number) => Number(new RegExp(`^msgx_http_refusals_total\\{status="${status}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
  return { 401: of(401), 429: of(429) };
}
const rssMb = (p: Proc) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p.child.pid}/status`, 'utf8'))![1]) / 1024;
const auditLines = (p: Proc) =>
  p.logs
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        return null;
      }
    })
    .filter((l): l is Record<string, unknown> => l !== null && l.audit === true);

/** A process started without the test harness's defaults (no token, no dev mode unless given). */
function spawnBare(name: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const base = testEnv();
  delete base.MSGX_API_TOKEN;
  delete base.MSGX_DEV_MODE;
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MSGX_') && !['DATABASE_URL', 'INBOX_URL', 'REDIS_URL'].includes(k)));
  const child = spawn(process.execPath, [`workers/${name}.ts`], {
    env: { ...clean, ...base, MSGX_HTTP_PORT_API: String(Number(process.env.TEST_PORT_BASE ?? 19500) - 10), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, out });
    });
  });
}

/** A valid SIS message of `n` empty sibling elements (the CPU bomb of the issue). */
const siblings = (n: number) => sisMessage({ type: 'FLOP', styp: 'UPD', body: `<FLOP><FLID>1</FLID><X>${'<b/>'.repeat(n)}</X></FLOP>` });

beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  api = startWorker('api', { ...PROD, MSGX_HTTP_HEADERS_TIMEOUT: '3s' }); // the headers-timeout case below waits it out
  procs.push(api);
  await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok);
});
afterAll(async () => {
  await stopAll(procs);
  await s?.close();
});

describe('1. authentication before the body is read', () => {
  it.each(['/ops/replay', '/ops/backfill-resume', '/ops/dispatch-replay', '/ops/dispatch-skip', '/requests'])('%s without a token: 401 even for a body that breaks the schema', async (path) => {
    const r = await json(path, { ids: 'a', eventIds: 'a' }, {});
    expect(r.status).toBe(401);
    expect(r.json.reason).toMatch(/bearer token/);
  });

  // The operator's view: GET routes whose parameters are broken too. The guard runs in
  // onRequest, before parameters are validated or a handler looks at them: 401, never 400/404.
  // From an address of their own, so these failures do not use up 127.0.0.1's auth-failure budget.
  it.each([
    '/ops/messages/abc',
    '/ops/messages/1e20',
    '/ops/messages/42?x=%00',
    '/flights/%00/timeline',
    '/flights/CA1234/timeline',
    '/ops/states?drop=table',
    '/ops/list?state=BROKEN&limit=-1',
    '/ops/list',
    '/ops/last-hour?x=1',
  ])('GET %s without a token: 401 before its parameters are looked at', async (path) => {
    const r = await http({ path, localAddress: '127.0.0.5' });
    expect(r.status).toBe(401);
    expect(r.json.reason).toMatch(/bearer token/);
  });

  it('a 15.8 MB nested JSON body without a token: 401 at once, /healthz stays under 100 ms', async () => {
    const nested = Buffer.from('['.repeat(7_900_000) + ']'.repeat(7_900_000));
    const post = json('/ops/replay', nested, {});
    const { worst } = await slowestHealthz(post);
    expect((await post).status).toBe(401);
    expect(worst).toBeLessThan(100);
  });

  it('60 half-sent 15 MB bodies without a token: each refused (401, then 429 once rate-limited) without the api buffering them', async () => {
    const before = rssMb(api);
    const refusedBefore = await refusals();
    const big = Buffer.alloc(1_000_000, 'a');
    // The api answers and closes without reading the body; a client still writing may see the
    // close first (EPIPE / ECONNRESET) and never read the answer: that is a refusal too.
    const closed = (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE' || e.code === 'ECONNRESET') return { status: 'closed' as const };
      throw e;
    };
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => xml(big, {}, { length: 15_000_000, partial: big.length, path: i % 2 ? '/cminmsgs/send' : '/ops/replay', localAddress: '127.0.0.3' }).catch(closed)),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.every((x) => x === 401 || x === 429 || x === 'closed')).toBe(true);
    // What the server refused, counted by the server: a client still writing its body may see the
    // close (ECONNRESET) before it reads the answer, so the answers read are not the count.
    const after = await refusals();
    expect(after[401] - refusedBefore[401]).toBe(20);
    expect(after[429] - refusedBefore[429]).toBe(40);
    expect(rssMb(api) - before).toBeLessThan(150);
  });
});

describe('2. bounded bodies, bounded parse time, timeouts', () => {
  it('a JSON admin route refuses a body over its own limit (413), before parsing it', async () => {
    const r = await json('/ops/replay', { ids: Array.from({ length: 60_000 }, (_, i) => i + 1) });
    expect(r.status).toBe(413);
    expect(r.json.reason).toMatch(/limit/);
  });

  it('a 15.6 MB valid message of <b/> siblings: 413 with the reason; /healthz answers meanwhile (median under 50 ms, none over 1 s)', async () => {
    const bomb = siblings(3_900_000);
    expect(bomb.length).toBeGreaterThan(15_500_000);
    const post = xml(bomb);
    const { worst, n, all } = await slowestHealthz(post);
    console.log('healthz ms while one big message is checked:', all.join(' '));
    const r = await post;
    expect(r.status).toBe(413);
    expect(r.json.reason).toMatch(/elements/);
    expect(n).toBeGreaterThan(0);
    // The check runs off the event loop (before: the loop blocked for 20.8 s). Receiving 15.6 MB
    // on it costs a few answers of 100-150 ms on a 2-core machine shared with the databases (seen
    // in fresh-clone CI runs), so the bound is the median and the worst within 1 s, as below.
    expect(all.toSorted((x, y) => x - y)[Math.floor(all.length / 2)]).toBeLessThan(50);
    expect(worst).toBeLessThan(1000);
  });

  it('four big messages at once are checked off the event loop; a legitimate large one is accepted', async () => {
    const big = siblings(300_000); // 1.2 MB, 300k elements: allowed, but a second or so of parsing
    const posts = Promise.all([xml(siblings(3_900_000)), xml(siblings(3_900_000)), xml(siblings(3_900_000)), xml(big)]);
    const { worst, all } = await slowestHealthz(posts);
    console.log('healthz ms while four big messages are checked:', all.join(' '));
    const answers = await posts;
    expect(answers.map((a) => a.status)).toEqual([413, 413, 413, 201]);
    // Parsing is off the event loop; what remains on it is receiving 60 MB at once (socket
    // reads, one copy per body) while the worker thread parses on the second core of a 2-core
    // machine shared with the test and the databases: single answers of 100-250 ms were seen
    // under a load average of 10, so the bound here is the median, and the worst within 1 s
    // (before: 20.8 s). One hostile body at a time is held to 100 ms above.
    expect(all.toSorted((x, y) => x - y)[Math.floor(all.length / 2)]).toBeLessThan(50);
    expect(worst).toBeLessThan(1000);
  });

  it('a client that never finishes its headers is disconnected (headers timeout)', async () => {
    const { connect } = await import('node:net');
    const sock = connect(api.port, '127.0.0.1');
    await new Promise((r) => sock.on('connect', r));
    sock.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const t0 = Date.now();
    let got = '';
    sock.on('data', (b) => (got += b));
    await new Promise((r) => sock.on('close', r));
    // msgx.http.headers-timeout (3 s here), checked every second: not before, and not much after
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2900);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(got === '' || got.startsWith('HTTP/1.1 408')).toBe(true);
  }, 30_000);
});

describe('3. hostile parameters: 400 with the reason, never a 500 with database text', () => {
  const cases: [string, () => Promise<Answer>][] = [
    ['GET /ops/messages?limit=-5', () => http({ path: '/ops/messages?limit=-5', headers: AUTH })],
    ['GET /ops/messages?limit=0.5', () => http({ path: '/ops/messages?limit=0.5', headers: AUTH })],
    ['GET /ops/messages?state=DEAD&state=FAILED', () => http({ path: '/ops/messages?state=DEAD&state=FAILED', headers: AUTH })],
    ['GET /ops/messages?state=%00', () => http({ path: '/ops/messages?state=%00', headers: AUTH })],
    ['GET /resources/status?type=GATE&type=STND', () => http({ path: '/resources/status?type=GATE&type=STND', headers: AUTH })],
    ['GET /reference/SLST/%00', () => http({ path: '/reference/SLST/%00', headers: AUTH })],
    ['GET /flights/%00', () => http({ path: '/flights/%00', headers: AUTH })],
    ['GET /all/flights?cursor=%00', () => http({ path: '/all/flights?cursor=%00', headers: AUTH })],
    ['GET /ops/dispatch/dead?limit=1e20', () => http({ path: '/ops/dispatch/dead?limit=1e20', headers: AUTH })],
    ['GET /ops/messages/0', () => http({ path: '/ops/messages/0', headers: AUTH })],
    ['GET /ops/messages/-1', () => http({ path: '/ops/messages/-1', headers: AUTH })],
    ['GET /ops/messages/1e20', () => http({ path: '/ops/messages/1e20', headers: AUTH })],
    ['GET /ops/messages/99999999999999999999', () => http({ path: '/ops/messages/99999999999999999999', headers: AUTH })],
    ['GET /ops/messages/1.5', () => http({ path: '/ops/messages/1.5', headers: AUTH })],
    ['GET /ops/messages/%00', () => http({ path: '/ops/messages/%00', headers: AUTH })],
    ['GET /ops/messages/1?limit=1', () => http({ path: '/ops/messages/1?limit=1', headers: AUTH })],
    ['GET /flights/%00/timeline', () => http({ path: '/flights/%00/timeline', headers: AUTH })],
    ['GET /flights/1%00/timeline', () => http({ path: '/flights/1%00/timeline', headers: AUTH })],
    ['GET /flights/<31 digits>/timeline', () => http({ path: `/flights/${'9'.repeat(31)}/timeline`, headers: AUTH })],
    ['GET /flights/-1/timeline', () => http({ path: '/flights/-1/timeline', headers: AUTH })],
    ['GET /ops/states?state=DEAD', () => http({ path: '/ops/states?state=DEAD', headers: AUTH })],
    ['GET /ops/list (no state)', () => http({ path: '/ops/list', headers: AUTH })],
    ['GET /ops/list?state=%00', () => http({ path: '/ops/list?state=%00', headers: AUTH })],
    ['GET /ops/list?state=DEAD&state=FAILED', () => http({ path: '/ops/list?state=DEAD&state=FAILED', headers: AUTH })],
    ['GET /ops/list?state=DEAD&reason=%00', () => http({ path: '/ops/list?state=DEAD&reason=PROTO%00COL', headers: AUTH })],
    ['GET /ops/list?state=DEAD&reason=<61 chars>', () => http({ path: `/ops/list?state=DEAD&reason=${'x'.repeat(61)}`, headers: AUTH })],
    ['GET /ops/list?state=DEAD&before=1e20', () => http({ path: '/ops/list?state=DEAD&before=1e20', headers: AUTH })],
    ['GET /ops/list?state=DEAD&before=-1', () => http({ path: '/ops/list?state=DEAD&before=-1', headers: AUTH })],
    ['GET /ops/list?state=DEAD&before=abc', () => http({ path: '/ops/list?state=DEAD&before=abc', headers: AUTH })],
    ['GET /ops/list?state=DEAD&limit=0', () => http({ path: '/ops/list?state=DEAD&limit=0', headers: AUTH })],
    ['GET /ops/list?state=DEAD&limit=501', () => http({ path: '/ops/list?state=DEAD&limit=501', headers: AUTH })],
    ['GET /ops/list?state=DEAD&limit=0.5', () => http({ path: '/ops/list?state=DEAD&limit=0.5', headers: AUTH })],
    ['GET /ops/list?state=DEAD&order=msg_id;drop', () => http({ path: '/ops/list?state=DEAD&order=msg_id;drop', headers: AUTH })],
    ['GET /ops/last-hour?minutes=600', () => http({ path: '/ops/last-hour?minutes=600', headers: AUTH })],
    ['POST /ops/replay {"ids":[1e20]}', () => json('/ops/replay', '{"ids":[1e20]}')],
    ['POST /ops/backfill-resume {"ids":[1e20]}', () => json('/ops/backfill-resume', '{"ids":[1e20]}')],
    ['POST /ops/dispatch-replay {"eventIds":[1e20]}', () => json('/ops/dispatch-replay', '{"eventIds":[1e20]}')],
    ['POST /ops/dispatch-skip {"eventIds":[1e20]}', () => json('/ops/dispatch-skip', '{"eventIds":[1e20]}')],
    ['POST /ops/replay with NUL in reason', () => json('/ops/replay', { state: 'DEAD', reason: 'EXH\u0000' })],
    ['POST /ops/dispatch-replay with NUL in flid', () => json('/ops/dispatch-replay', { flid: '1\u0000' })],
    ['POST /ops/dispatch-skip with NUL in flid', () => json('/ops/dispatch-skip', { flid: '\u0000' })],
    ['POST /ops/replay with an unknown property', () => json('/ops/replay', { ids: [1], drop: 'table' })],
    ['POST /requests with NUL in rtype', () => json('/requests', { type: 'RQRD', rtype: 'SL\u0000' })],
    ['POST /ops/replay with a JSON syntax error', () => json('/ops/replay', '{"ids":[1,}')],
    ['POST /ops/replay with 200 KB of nested arrays (with the token)', () => json('/ops/replay', '['.repeat(100_000) + ']'.repeat(100_000))],
    ['POST /ops/replay with a nested object in ids', () => json('/ops/replay', { ids: [{ $gt: 0 }] })],
    ['POST /cminmsgs/send nesting over the limit', () => xml(sisMessage({ body: `<FLOP>${'<a>'.repeat(5000)}${'</a>'.repeat(5000)}</FLOP>` }))],
    ['POST /cminmsgs/send with a prototype name', () => xml(sisMessage({ body: '<FLOP><__proto__><x>1</x></__proto__></FLOP>' }))],
    ['POST /cminmsgs/send with a constructor attribute', () => xml(sisMessage({ body: '<FLOP constructor="1"><FLID>1</FLID></FLOP>' }))],
  ];
  it.each(cases)('%s → 400 with a reason', async (_name, send) => {
    const r = await send();
    expect(r.status).toBe(400);
    expect(typeof r.json.reason).toBe('string');
    expect(r.text).not.toMatch(/invalid input syntax|violates|postgres|relation|column|syntax error at|out of range for type|stack/i);
  });

  it('a 500 is logged with a request id and answered without internal text (inbox login failure)', async () => {
    const url = new URL(TEST_INBOX_URL);
    url.username = 'msgx_nobody';
    url.password = 'sekret-pw';
    const broken = startWorker('api', { ...PROD, INBOX_URL: url.toString() });
    procs.push(broken);
    await waitFor('broken api up', async () => (await fetch(`http://127.0.0.1:${broken.port}/healthz`)).ok);
    const r = await xml(sisMessage(), AUTH, { port: broken.port });
    expect(r.status).toBeGreaterThanOrEqual(500);
    expect(r.text).not.toMatch(/Access denied|msgx_nobody|sekret|ER_/);
    const id = String(r.json.requestId);
    expect(id).toMatch(/\S{8,}/);
    await waitFor('the error is logged', () => broken.logs.some((l) => l.includes(id) && l.includes('"level":50')));
    expect(broken.logs.join('\n')).not.toContain('sekret-pw');
  });
});

describe('4. audit trail and rate-limited auth failures', () => {
  it("an operator action leaves one structured line: who (the key's name), role, what, selection, IDs touched, result", async () => {
    const r = await json('/ops/replay', { ids: [424242] });
    expect(r.status).toBe(200);
    const line = await waitFor('audit line', () => auditLines(api).find((l) => l.action === 'replay' && JSON.stringify(l.selection).includes('424242')));
    expect(line).toMatchObject({ who: 'key:security-test', role: 'admin', route: 'POST /ops/replay', status: 200, touched: { msgIds: [] } });
    expect(JSON.stringify(line)).not.toContain(TOKEN);
    expect(line.result).toMatchObject({ replayed: 0, untouched: 1 }); // the id matched nothing replayable: counted, not hidden
    expect(line.requestId).toBeTruthy();
  });

  it('a rejected token leaves an audit line without the token', async () => {
    // from an address of its own: refusals are written once per address per minute
    await http({ path: '/ops/summary', headers: { authorization: 'Bearer guess-number-one' }, localAddress: '127.0.0.9' });
    const line = await waitFor('audit line', () => auditLines(api).find((l) => l.action === 'refused' && l.route === 'GET /ops/summary'));
    expect(line).toMatchObject({ status: 401, who: null, ip: '127.0.0.9' });
    expect(JSON.stringify(line)).not.toContain('guess-number-one');
  });

  it('repeated auth failures from one address are rate-limited (429); the right key from there still passes; other addresses unaffected', async () => {
    const from = { localAddress: '127.0.0.7' };
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) statuses.push((await http({ path: '/ops/summary', headers: { authorization: `Bearer wrong-${i}` }, ...from })).status);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.at(-1)).toBe(429);
    expect((await http({ path: '/ops/summary', headers: AUTH, ...from })).status).toBe(200);
    expect((await http({ path: '/ops/summary', headers: { authorization: 'Bearer wrong-again' }, ...from })).status).toBe(429);
    expect((await http({ path: '/ops/summary', headers: AUTH })).status).toBe(200);
    // one audit line for that address in this minute; the other 40 refusals are counted, not written
    expect(auditLines(api).filter((l) => l.action === 'refused' && l.ip === '127.0.0.7')).toHaveLength(1);
  });
});

describe('5. credentials', () => {
  it('a bare key (no "Bearer "), another scheme or a changed key is refused', async () => {
    expect((await http({ path: '/ops/summary', headers: { authorization: TOKEN } })).status).toBe(401);
    expect((await http({ path: '/ops/summary', headers: { authorization: `Basic ${TOKEN}` } })).status).toBe(401);
    expect((await http({ path: '/ops/summary', headers: { authorization: `Bearer ${TOKEN}x` } })).status).toBe(401);
    expect((await http({ path: '/ops/summary', headers: AUTH })).status).toBe(200);
  });

  it('reads need a viewer: anonymous reads of flights, reference data, metrics, the API document are refused', async () => {
    for (const path of ['/all/flights', '/flights/1', '/reference/SLST', '/resources/status', '/metrics', '/openapi.json', '/ops/summary'])
      expect((await http({ path, localAddress: '127.0.0.11' })).status, path).toBe(401);
    const open = await http({ path: '/healthz' });
    expect(open.status).toBe(200);
    expect(Object.keys(open.json).sort()).toEqual(['ok', 'process']); // no reasons, host names or users without a viewer
  });

  it('with neither API keys nor an identity provider nor development mode the api refuses to start', async () => {
    const r = await spawnBare('api', { MSGX_DEV_MODE: 'false' });
    expect(r.code).toBe(2);
    expect(r.out).toContain('outside development mode the api needs MSGX_API_KEYS_FILE (service accounts) or MSGX_OIDC_ISSUER (sign-in)');
  });

  it('outside development mode the shared token is refused at start, naming the way out', async () => {
    const r = await spawnBare('api', { MSGX_API_TOKEN: 'a-long-shared-token-0123456789abcdef', MSGX_DEV_MODE: 'false', MSGX_API_KEYS_FILE: KEYS });
    expect(r.code).toBe(2);
    expect(r.out).toContain('MSGX_API_TOKEN (the shared token) works only in development mode on loopback');
    expect(r.out).not.toContain('a-long-shared-token');
  });

  it('development mode is asked for explicitly, on loopback only: then, and only then, "Bearer dev" works (as an admin)', async () => {
    const dev = startWorker('api', { MSGX_DEV_MODE: 'true', MSGX_API_TOKEN: '', MSGX_HTTP_ANONYMOUS_READS: '' });
    procs.push(dev);
    await waitFor('dev api up', async () => (await fetch(`http://127.0.0.1:${dev.port}/healthz`)).ok);
    expect((await http({ path: '/ops/me', headers: { authorization: 'Bearer dev' }, port: dev.port })).json).toMatchObject({ via: 'dev', role: 'admin' });
    expect((await http({ path: '/ops/summary', headers: { authorization: 'Bearer dev' } })).status).toBe(401);
    const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
    expect(pkg.scripts.start).toContain('MSGX_DEV_MODE=');
    const off = await spawnBare('api', { MSGX_DEV_MODE: 'true', MSGX_HTTP_HOST: '0.0.0.0' });
    expect(off.code).toBe(2);
    expect(off.out).toContain('development mode (MSGX_DEV_MODE=true) only on a loopback address');
  });
});

describe('6. headers and hosts', () => {
  it('the console: a CSP whose script hashes match its inline scripts, frame-ancestors none, nosniff, no token from the URL', async () => {
    const r = await http({ path: '/ops' });
    expect(r.status).toBe(200);
    expect(r.text).toContain('<script type="module" src="/ops/js/main.js">');
    const csp = String(r.headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    const scriptSrc = /script-src ([^;]*)/.exec(csp)![1];
    expect(scriptSrc).not.toContain('unsafe-inline');
    for (const m of r.text.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)) {
      expect(scriptSrc).toContain(`'sha256-${createHash('sha256').update(m[1]).digest('base64')}'`);
    }
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.text).not.toMatch(/location\.hash/);
  });

  it.each(['/all/flights', '/ops/summary', '/reference/SLST', '/ops/states', '/ops/list?state=DEAD'])('JSON answers of %s: CSP, nosniff, Cache-Control no-store', async (path) => {
    const r = await http({ path, headers: AUTH });
    expect(r.status).toBe(200);
    expect(String(r.headers['content-security-policy'])).toContain("default-src 'none'");
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['cache-control']).toBe('no-store');
  });

  it.each(['/metrics', '/healthz', '/reference/SLST', '/all/flights'])('%s with an unexpected Host header (DNS rebinding): 400', async (path) => {
    const r = await http({ path, headers: { ...AUTH, host: 'attacker.example:8080' } });
    expect(r.status).toBe(400);
    expect(r.json.reason).toMatch(/Host/);
    expect((await http({ path, headers: { ...AUTH, host: `localhost:${api.port}` } })).status).toBe(200);
  });
});

describe('7. secrets never logged', () => {
  it('redactUrl hides a password with an empty user name', () => {
    expect(redactUrl('postgres://:secret@db:5432/msgx')).not.toContain('secret');
    expect(redactUrl('postgres://u:secret@db:5432/msgx')).toBe('postgres://u:***@db:5432/msgx');
    expect(redactUrl('postgres://u@db/msgx')).toBe('postgres://u@db/msgx');
  });

  it('a configuration error does not print the raw URL', async () => {
    const r = await spawnBare('api', { DATABASE_URL: 'postgres://:hunter2@db:notaport/x', MSGX_DEV_MODE: 'true' });
    expect(r.code).toBe(2);
    expect(r.out).toContain('DATABASE_URL');
    expect(r.out).not.toContain('hunter2');
  });
});
