// R3 (quality-bars.md), API part: hostile bodies at POST /cminmsgs/send end as a 4xx with a
// reason, and nothing reaches the inbox; the api keeps serving and a good message after them
// is inserted. The api is a worker entry, so it runs as a real process (test/support/processes.ts).
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServices, resetPipeline, sisMessage, type TestServices } from '../support/services.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';

let s: TestServices;
let api: Proc;
const procs: Proc[] = [];
const DEFAULT_MAX = 16_000_000; // msgx.inbox.max-message-bytes default (reference.md)

const enc = new TextEncoder();
const bytes = (...parts: (string | number[])[]) => {
  const chunks = parts.map((p) => (typeof p === 'string' ? enc.encode(p) : new Uint8Array(p)));
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
};
/** A well-formed message split around a value, so that raw bytes can be put inside REMC. */
const around = () => {
  const xml = sisMessage({ type: 'FLOP', styp: 'REMC', body: '<FLOP><FLID>101</FLID><REMC>@@</REMC></FLOP>' });
  const [a, b] = xml.split('@@');
  return { a, b };
};

/**
 * POST with node:http rather than fetch: a server that refuses an oversize body answers 413 as
 * soon as it has the headers and closes the connection, and fetch reports that as EPIPE instead
 * of returning the answer. Here the answer wins; an error on the request side is ignored once it
 * has arrived.
 */
function post(p: Proc, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
  const buf = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      {
        host: '127.0.0.1',
        port: p.port,
        path: '/cminmsgs/send',
        method: 'POST',
        headers: { authorization: 'Bearer test-token', 'content-type': 'application/xml', 'content-length': String(buf.length), ...headers },
      },
      (res) => {
        answered = true;
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () => {
          const text = Buffer.concat(parts).toString('utf8');
          let json: Record<string, unknown>;
          try {
            json = JSON.parse(text);
          } catch {
            json = { raw: text };
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', (e) => {
      if (!answered) setTimeout(() => !answered && reject(e), 2000);
    });
    if (buf.length > DEFAULT_MAX) {
      // Declared size over the limit: the server must answer from the headers alone. Sending the
      // 16 MB first would race its early answer against our write (EPIPE on a loaded machine).
      req.flushHeaders();
      return;
    }
    req.end(buf);
  });
}

async function inboxCount(): Promise<number> {
  const [rows] = await s.inbox.query<import('mysql2').RowDataPacket[]>('SELECT COUNT(*) n FROM cminmsgs');
  return Number(rows[0].n);
}

interface ApiCase {
  name: string;
  body: () => string | Uint8Array;
  headers?: Record<string, string>;
  status: number;
  /** On the JSON answer's `reason`. */
  reason: RegExp;
}

const { a, b } = around();
const CASES: ApiCase[] = [
  { name: 'invalid UTF-8 (lone continuation bytes)', body: () => bytes(a, [0x80, 0x81], b), status: 400, reason: /not valid UTF-8/ },
  { name: 'invalid UTF-8 (0xFF 0xFE)', body: () => bytes(a, [0xff, 0xfe], b), status: 400, reason: /not valid UTF-8/ },
  { name: 'invalid UTF-8 (overlong "/")', body: () => bytes(a, [0xc0, 0xaf], b), status: 400, reason: /not valid UTF-8/ },
  { name: 'invalid UTF-8 (encoded surrogate U+D800)', body: () => bytes(a, [0xed, 0xa0, 0x80], b), status: 400, reason: /not valid UTF-8/ },
  { name: 'invalid UTF-8 (truncated 3-byte sequence at the end)', body: () => bytes(a, 'x', b, [0xe4, 0xb8]), status: 400, reason: /not valid UTF-8/ },
  { name: 'Latin-1 bytes declared as UTF-8', body: () => bytes(a, [0x63, 0x61, 0x66, 0xe9], b), status: 400, reason: /not valid UTF-8/ },
  {
    name: 'oversize body (default limit + 1 byte)',
    body: () => sisMessage({ body: `<X>${'a'.repeat(DEFAULT_MAX)}</X>` }),
    status: 413,
    reason: /exceeds msgx\.inbox\.max-message-bytes \(16000000 bytes\)/,
  },
  { name: 'not XML', body: () => 'this is not xml', status: 400, reason: /^not well-formed XML/ },
  { name: 'JSON', body: () => '{"MSG":{}}', status: 400, reason: /^not well-formed XML/ },
  { name: 'truncated XML', body: () => a, status: 400, reason: /^not well-formed XML/ },
  { name: 'junk after </MSG>', body: () => `${a}x${b}junk`, status: 400, reason: /^not well-formed XML: Extra text at the end/ },
  {
    name: 'DOCTYPE with an entity bomb',
    body: () => `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]><MSG>&lol2;</MSG>`,
    status: 400,
    reason: /^DOCTYPE\/ENTITY declarations are not accepted$/,
  },
  {
    name: 'DOCTYPE with an external entity',
    body: () => `<?xml version="1.0"?><!DOCTYPE MSG [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><MSG>&xxe;</MSG>`,
    status: 400,
    reason: /^DOCTYPE\/ENTITY declarations are not accepted$/,
  },
  {
    name: 'external DTD',
    body: () => `<!DOCTYPE MSG SYSTEM "http://127.0.0.1:1/x.dtd">${a.replace(/^<\?xml[^>]*>\s*/, '')}x${b}`,
    status: 400,
    reason: /^DOCTYPE\/ENTITY declarations are not accepted$/,
  },
  { name: 'NUL character (valid UTF-8, not XML)', body: () => `${a}A\u0000B${b}`, status: 400, reason: /character U\+0000 is not allowed in XML/ },
  { name: 'no META', body: () => '<MSG><FLOP><FLID>1</FLID></FLOP></MSG>', status: 400, reason: /^no META element$/ },
  { name: 'META with a bad SEQN', body: () => sisMessage().replace(/<SEQN>\d+/, '<SEQN>12a'), status: 400, reason: /^META\/SEQN="12a" is not an integer$/ },
  { name: 'empty body', body: () => '', status: 400, reason: /empty/ },
  { name: 'wrong media type', body: () => sisMessage(), headers: { 'content-type': 'application/json' }, status: 415, reason: /application\/xml/ },
  { name: 'no bearer token', body: () => sisMessage(), headers: { authorization: '' }, status: 401, reason: /token/ },
];

beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  api = startWorker('api');
  procs.push(api);
  await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok);
});
afterAll(async () => {
  await stopAll(procs);
  await s?.close();
});

describe('R3 hostile bodies at POST /cminmsgs/send', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s → 4xx with a reason, nothing inserted', async (_name, c) => {
    const before = await inboxCount();
    const r = await post(api, c.body(), c.headers);
    expect(r.status).toBe(c.status);
    const reason = String(r.json.reason ?? '');
    expect(reason).toMatch(c.reason);
    expect(await inboxCount()).toBe(before);
    expect(api.child.exitCode).toBeNull();
  });

  it('the api still accepts a good message afterwards (and only that one reached the inbox)', async () => {
    const ok = await post(api, sisMessage({ type: 'FLOP', styp: 'REMC', body: '<FLOP><FLID>101</FLID><REMC>航班</REMC></FLOP>' }));
    expect(ok.status).toBe(201);
    expect(typeof ok.json.id).toBe('number');
    expect(await inboxCount()).toBe(1);
    const [rows] = await s.inbox.query<import('mysql2').RowDataPacket[]>('SELECT CMINMSGS_CLOB_MSG m FROM cminmsgs');
    expect(rows[0].m).toContain('<REMC>航班</REMC>');
  });
});
