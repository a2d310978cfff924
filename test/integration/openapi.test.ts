// The HTTP API as an OpenAPI document. The real api (with intake and pump, so
// that flights and reference data exist) serves GET /openapi.json; every route is in it, and
// real answers of every documented operation are validated (ajv) against the document's
// response schema of their status code.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServices, resetDomain, resetPipeline, type TestServices } from '../support/services.ts';
import { startWorker, stopAll, waitFor, type Proc } from '../support/processes.ts';
import { keyLine, newKey } from '../../lib/access/keys.ts';

const TOKEN = newKey(); // an admin's API key
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** Every route of the api process (README "HTTP API"). */
const ROUTES = [
  'post /cminmsgs/send',
  'get /flights/{flid}',
  'get /all/flights',
  'get /reference/{rtype}',
  'get /reference/{rtype}/{rkey}',
  'get /resources/status',
  'post /requests',
  'get /requests',
  'get /requests/{id}',
  'post /ops/dispatch-replay',
  'post /ops/dispatch-skip',
  'get /ops/dispatch/dead',
  'post /ops/replay',
  'post /ops/backfill-resume',
  'get /ops/messages',
  'get /ops',
  'get /ops/summary',
  'get /ops/js/{file}',
  'get /ops/console.css',
  'get /ops/config',
  'get /ops/me',
  'get /ops/messages/{id}',
  'get /flights/{flid}/timeline',
  'get /ops/states',
  'get /ops/list',
  'get /ops/last-hour',
  'get /healthz',
  'get /metrics',
];

let s: TestServices;
let api: Proc;
const procs: Proc[] = [];
type Doc = { openapi: string; paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }>; security?: unknown }>> };
let doc: Doc;
const ajv = new Ajv({ strict: false, allErrors: true });
formats.default(ajv); // ajv-formats is CommonJS: its plugin is module.exports.default too
const compiled = new Map<string, ValidateFunction>();
const checked = new Set<string>();

const xmlMsg = (type: string, styp: string, body: string, seqn: number) =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<MSG><META><SNDR>AODB</SNDR><SEQN>${seqn}</SEQN><DTTM>20261201080000</DTTM><TYPE>${type}</TYPE><STYP>${styp}</STYP></META>${body}</MSG>`;

/** A real request; its answer is validated against the document (operation = method + template). */
async function call(method: string, template: string, url: string, o: { body?: unknown; xml?: string; auth?: boolean } = {}) {
  const headers: Record<string, string> = { ...(o.auth === false ? {} : AUTH) };
  let body: string | undefined;
  if (o.xml !== undefined) {
    headers['content-type'] = 'application/xml';
    body = o.xml;
  } else if (o.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(o.body);
  }
  const r = await fetch(`http://127.0.0.1:${api.port}${url}`, { method: method.toUpperCase(), headers, body });
  const text = await r.text();
  const op = doc.paths[template]?.[method];
  expect(op, `${method} ${template} is in the document`).toBeDefined();
  const response = op!.responses[String(r.status)];
  expect(response, `${method} ${template}: status ${r.status} is documented`).toBeDefined();
  const [type, media] = Object.entries(response.content ?? {})[0] ?? [];
  if (type === 'application/json') {
    const key = `${method} ${template} ${r.status}`;
    const validate = compiled.get(key) ?? ajv.compile(media!.schema as object);
    compiled.set(key, validate);
    const json = JSON.parse(text);
    expect(validate(json), `${key}: ${ajv.errorsText(validate.errors)} in ${text.slice(0, 300)}`).toBe(true);
  }
  checked.add(`${method} ${template}`);
  return { status: r.status, json: type === 'application/json' ? JSON.parse(text) : text };
}

beforeAll(async () => {
  s = await openServices();
  await resetPipeline(s);
  await resetDomain(s);
  const keys = join(mkdtempSync(join(tmpdir(), 'msgx-openapi-')), 'api-keys');
  writeFileSync(keys, keyLine('openapi-test', 'admin', TOKEN));
  const env = { MSGX_DEV_MODE: 'false', MSGX_API_TOKEN: '', MSGX_API_KEYS_FILE: keys, MSGX_HTTP_ANONYMOUS_READS: '' };
  api = startWorker('api', env);
  procs.push(api, startWorker('intake', env), startWorker('pump', env));
  await waitFor('api up', async () => (await fetch(`http://127.0.0.1:${api.port}/healthz`)).ok);
  doc = (await (await fetch(`http://127.0.0.1:${api.port}/openapi.json`, { headers: AUTH })).json()) as Doc;
});
afterAll(async () => {
  await stopAll(procs);
  await s?.close();
});

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3 document with every route, the routes that need a role marked, and no route left without a schema', () => {
    expect(doc.openapi).toMatch(/^3\./);
    const ops = Object.entries(doc.paths).flatMap(([p, m]) => Object.keys(m).map((x) => `${x} ${p}`));
    expect(ops.sort()).toEqual([...ROUTES].sort());
    expect(doc.paths['/ops/replay'].post.security).toEqual([{ bearer: [] }]);
    expect(doc.paths['/flights/{flid}'].get.security).toEqual([{ bearer: [] }]); // reads need a viewer
    expect(Object.keys(doc.paths['/flights/{flid}'].get.responses)).toEqual(expect.arrayContaining(['401', '403', '429']));
    expect(doc.paths['/ops'].get.security).toBeUndefined();
    expect(api.logs.some((l) => l.includes('routes without a schema'))).toBe(false);
  });

  it('real answers of every operation match the document', async () => {
    const schd = `<SCHD><RECS>1</RECS><FLTR><FLID>101</FLID><FLNO>XX101</FLNO><SODT>09DEC260800</SODT><ACFT>320</ACFT></FLTR></SCHD>`;
    const sent = await call('post', '/cminmsgs/send', '/cminmsgs/send', { xml: xmlMsg('SCHD', 'DNLD', schd, 1) });
    expect(sent.status).toBe(201);
    const schdId = sent.json.id as number;
    expect((await call('post', '/cminmsgs/send', '/cminmsgs/send', { xml: xmlMsg('SLST', 'DNLD', '<RECS>1</RECS><SLST><SCOD>S1</SCOD><STNM>Stand 1</STNM></SLST>', 2) })).status).toBe(201);
    expect((await call('post', '/cminmsgs/send', '/cminmsgs/send', { xml: 'not xml' })).status).toBe(400);
    expect((await call('post', '/cminmsgs/send', '/cminmsgs/send', { xml: xmlMsg('X', 'Y', '<X/>', 3), auth: false })).status).toBe(401);

    await waitFor('flight 101 applied by the pump', async () => (await fetch(`http://127.0.0.1:${api.port}/flights/101`, { headers: AUTH })).ok, 60_000, 250);
    expect((await call('get', '/flights/{flid}', '/flights/101')).json).toMatchObject({ FLID: '101' });
    expect((await call('get', '/flights/{flid}', '/flights/999')).status).toBe(404);
    // as of a moment: the version made at its UPDATED_AT; before the flight existed; a bad moment
    const f101 = (await call('get', '/flights/{flid}', '/flights/101')).json;
    expect((await call('get', '/flights/{flid}', `/flights/101?asOf=${encodeURIComponent(f101.UPDATED_AT)}`)).json).toMatchObject({ FLID: '101', AS_OF: { stateVersion: f101.STATE_VERSION } });
    expect((await call('get', '/flights/{flid}', '/flights/101?asOf=2000-01-01T00:00:00Z')).json).toMatchObject({ error: 'not-found', code: 'not-yet-created' });
    expect((await call('get', '/flights/{flid}', '/flights/101?asOf=soon')).status).toBe(400);
    expect((await call('get', '/flights/{flid}', '/flights/abc')).status).toBe(400);
    expect((await call('get', '/all/flights', '/all/flights?limit=10')).json).toMatchObject({ flights: [{ FLID: '101' }], nextCursor: null });
    expect((await call('get', '/all/flights', '/all/flights?limit=0')).status).toBe(400);

    await waitFor('SLST applied', async () => (await fetch(`http://127.0.0.1:${api.port}/reference/SLST/S1`, { headers: AUTH })).ok, 60_000, 250);
    expect((await call('get', '/reference/{rtype}', '/reference/SLST')).json).toMatchObject({ rtype: 'SLST', count: 1 });
    expect((await call('get', '/reference/{rtype}', '/reference/NOPE')).status).toBe(404);
    expect((await call('get', '/reference/{rtype}/{rkey}', '/reference/SLST/S1')).json).toMatchObject({ rkey: 'S1' });
    expect((await call('get', '/reference/{rtype}/{rkey}', '/reference/SLST/S9')).status).toBe(404);
    expect((await call('get', '/resources/status', '/resources/status?type=STND')).status).toBe(200);
    expect((await call('get', '/resources/status', '/resources/status?type=PIER')).status).toBe(400);

    expect((await call('post', '/requests', '/requests', { body: { type: 'RQRD', rtype: 'SLST' } })).status).toBe(202);
    expect((await call('post', '/requests', '/requests', { body: { type: 'RQFD', operationDay: 'tomorrow' } })).status).toBe(400);
    expect((await call('post', '/requests', '/requests', { body: { type: 'RQRD', rtype: 'SLST' }, auth: false })).status).toBe(401);
    const made = (await call('get', '/requests', '/requests?limit=5')).json.requests as { id: number }[];
    expect(made.length).toBeGreaterThan(0);
    expect((await call('get', '/requests/{id}', `/requests/${made[0].id}`)).json).toMatchObject({ id: made[0].id, kind: 'RQRD' });
    expect((await call('get', '/requests/{id}', '/requests/99999999')).status).toBe(404);

    expect((await call('post', '/ops/replay', '/ops/replay', { body: { ids: [1] } })).json).toMatchObject({ replayed: [], untouched: [expect.stringMatching(/^1: /)] });
    expect((await call('post', '/ops/replay', '/ops/replay', { body: {} })).status).toBe(400);
    expect((await call('post', '/ops/backfill-resume', '/ops/backfill-resume', { body: { reason: 'MISSING_ROW' } })).status).toBe(200);
    expect((await call('get', '/ops/messages', '/ops/messages?state=SUCCEEDED&limit=5')).json.messages.length).toBeGreaterThan(0);
    expect((await call('get', '/ops/summary', '/ops/summary')).status).toBe(200);
    expect((await call('get', '/ops/summary', '/ops/summary', { auth: false })).status).toBe(401);
    expect((await call('get', '/ops/dispatch/dead', '/ops/dispatch/dead?target=msg')).json).toEqual({ dead: [] });
    expect((await call('post', '/ops/dispatch-replay', '/ops/dispatch-replay', { body: { all: true } })).json).toEqual({ replayed: [], untouched: ['no DEAD event in the outbox'] });
    expect((await call('post', '/ops/dispatch-skip', '/ops/dispatch-skip', { body: { eventIds: [999999] } })).json).toEqual({ skipped: [], untouched: ['999999: no such event'] });
    expect((await call('post', '/ops/dispatch-skip', '/ops/dispatch-skip', { body: { eventIds: [1], all: true } })).status).toBe(400);
    expect((await call('get', '/healthz', '/healthz')).json).toMatchObject({ ok: true, process: 'api' });
    expect(String((await call('get', '/metrics', '/metrics')).json)).toContain('# HELP');
    expect(String((await call('get', '/ops', '/ops')).json)).toContain('<html');
    expect(String((await call('get', '/ops/js/{file}', '/ops/js/session.js', { auth: false })).json)).toContain('code_challenge_method');
    expect((await call('get', '/ops/js/{file}', '/ops/js/nope.js', { auth: false })).status).toBe(404);
    expect((await call('get', '/ops/config', '/ops/config', { auth: false })).json).toEqual({ tokenSignIn: false, oidc: null });
    expect((await call('get', '/ops/me', '/ops/me')).json).toMatchObject({ via: 'key', subject: 'openapi-test', name: null, role: 'admin' });
    expect((await call('get', '/ops/me', '/ops/me', { auth: false })).status).toBe(401);
    expect((await call('get', '/flights/{flid}', '/flights/101', { auth: false })).status).toBe(401);
    expect(String((await call('get', '/ops/console.css', '/ops/console.css', { auth: false })).json)).toContain('{');

    // the operator's view: a message trace, a flight timeline, counts, a list page, the last hour
    await waitFor(
      'the SCHD message terminal',
      async () => (await (await fetch(`http://127.0.0.1:${api.port}/ops/messages/${schdId}`, { headers: AUTH })).json()).state?.state === 'SUCCEEDED',
      60_000,
      250,
    );
    const trace = await call('get', '/ops/messages/{id}', `/ops/messages/${schdId}`);
    expect(trace.json).toMatchObject({ msgId: schdId, found: true, inbox: { present: true, type: 'SCHD', subtype: 'DNLD' }, state: { state: 'SUCCEEDED' } });
    expect(trace.json.flights).toContainEqual(expect.objectContaining({ flid: '101', msgId: schdId, stateVersion: 1 }));
    expect(trace.json.events.length).toBeGreaterThan(0);
    expect((await call('get', '/ops/messages/{id}', '/ops/messages/999999')).status).toBe(404);
    expect((await call('get', '/ops/messages/{id}', '/ops/messages/abc')).status).toBe(400);
    expect((await call('get', '/ops/messages/{id}', `/ops/messages/${schdId}`, { auth: false })).status).toBe(401);
    const timeline = await call('get', '/flights/{flid}/timeline', '/flights/101/timeline');
    expect(timeline.json).toMatchObject({ flid: '101', status: 'ACTIVE', current: { stateVersion: 1 }, versions: [{ stateVersion: 1, source: 'change', message: { id: schdId } }] });
    expect((await call('get', '/flights/{flid}/timeline', '/flights/4242/timeline')).status).toBe(404);
    expect((await call('get', '/flights/{flid}/timeline', '/flights/CA1/timeline')).status).toBe(400);
    const states = await call('get', '/ops/states', '/ops/states');
    expect(states.json.states.find((x: { state: string }) => x.state === 'SUCCEEDED').count).toBeGreaterThanOrEqual(1);
    expect((await call('get', '/ops/states', '/ops/states?x=1')).status).toBe(400);
    const page = await call('get', '/ops/list', '/ops/list?state=SUCCEEDED&limit=1');
    expect(page.json).toMatchObject({ state: 'SUCCEEDED', reason: null, messages: [{ state: 'SUCCEEDED' }] });
    expect(page.json.nextBefore).toBe(page.json.messages[0].msgId);
    expect((await call('get', '/ops/list', `/ops/list?state=SUCCEEDED&reason=&before=${page.json.nextBefore}`)).status).toBe(200);
    expect((await call('get', '/ops/list', '/ops/list?state=BROKEN')).status).toBe(400);
    expect((await call('get', '/ops/list', '/ops/list?state=DEAD&limit=0')).status).toBe(400);
    const hour = await call('get', '/ops/last-hour', '/ops/last-hour');
    expect(hour.json.backlog).toHaveLength(60);
    expect(hour.json.applied.SUCCEEDED.reduce((a: number, b: number) => a + b, 0)).toBeGreaterThanOrEqual(1);
    expect((await call('get', '/ops/last-hour', '/ops/last-hour', { auth: false })).status).toBe(401);

    expect([...checked].sort()).toEqual([...ROUTES].sort());
  });
});
