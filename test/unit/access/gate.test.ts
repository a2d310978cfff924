// The gate's decisions (lib/access/gate.ts) as data: Host and Origin allowlist, who is calling,
// the role each route needs, anonymous reads, the failure limit, and the bounded audit of refusals.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/core/clock.ts';
import { Gate, hostName, type GateRequest } from '../../../lib/access/gate.ts';
import { Identity } from '../../../lib/access/identity.ts';
import { hashKey, KeyStore } from '../../../lib/access/keys.ts';
import { AuditTrail } from '../../../lib/access/trail.ts';

function setup(o: { hosts?: string[]; anonymous?: string[]; dev?: string } = {}) {
  const file = join(mkdtempSync(join(tmpdir(), 'msgx-gate-')), 'keys');
  writeFileSync(file, `prometheus viewer ${hashKey('msgxk_view')}\nops operator ${hashKey('msgxk_op')}\n`);
  const clock = new ManualClock('2026-12-01T00:00:00Z');
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, new Writable({ write: (b, _e, cb) => cb(void lines.push(JSON.parse(String(b)))) }));
  const trail = new AuditTrail({ process: 'test', log, clock, timeoutMs: 1000 });
  const counted: number[] = [];
  const gate = new Gate({
    identity: new Identity({ keys: new KeyStore(file), devToken: o.dev, clock }),
    allowedHosts: o.hosts ?? [],
    anonymousReads: new Set(o.anonymous ?? []),
    clock,
    trail,
    count: (s) => counted.push(s),
  });
  const ask = (r: Partial<GateRequest> & { key?: string }) =>
    gate.check({ method: 'GET', route: '/all/flights', host: '127.0.0.1:8080', origin: undefined, authorization: r.key ? `Bearer ${r.key}` : undefined, ip: '10.9.8.7', requestId: 'r1', ...r });
  return { ask, lines: () => lines.filter((l) => l.audit === true), counted, clock, trail };
}

describe('the access gate', () => {
  it('Host: loopback names always, msgx.http.allowed-hosts else, a port ignored; Origin the same', async () => {
    const { ask } = setup({ hosts: ['api', 'gateway.airport.example'] });
    for (const host of ['127.0.0.1:8080', 'localhost', '[::1]:8080', 'api:8080', 'GATEWAY.airport.example']) expect((await ask({ host, key: 'msgxk_view' })).allow, host).toBe(true);
    const bad = await ask({ host: 'attacker.example:8080', key: 'msgxk_view' });
    expect(bad).toMatchObject({ allow: false, status: 400, body: { error: 'bad-host' } });
    expect((await ask({ origin: 'https://gateway.airport.example', key: 'msgxk_view' })).allow).toBe(true);
    expect(await ask({ origin: 'https://attacker.example', key: 'msgxk_view' })).toMatchObject({ allow: false, status: 403, body: { error: 'bad-origin' } });
    expect([hostName('[::1]:9'), hostName('A.b:1'), hostName('http://[::1]:8/', true)]).toEqual(['::1', 'a.b', '::1']);
  });

  it('a read needs a viewer; an action needs an operator (403 naming who); injection an admin', async () => {
    const { ask } = setup();
    expect(await ask({})).toMatchObject({ allow: false, status: 401 });
    expect(await ask({ key: 'msgxk_wrong' })).toMatchObject({ allow: false, status: 401, body: { reason: 'unknown API key' } });
    expect(await ask({ key: 'msgxk_view' })).toMatchObject({ allow: true, principal: { via: 'key', subject: 'prometheus', role: 'viewer' }, details: true });
    expect(await ask({ key: 'msgxk_view', method: 'POST', route: '/ops/dispatch-skip' })).toMatchObject({
      allow: false,
      status: 403,
      body: { error: 'forbidden', reason: 'POST /ops/dispatch-skip needs the operator role; prometheus has viewer' },
    });
    expect((await ask({ key: 'msgxk_op', method: 'POST', route: '/ops/dispatch-skip' })).allow).toBe(true);
    expect(await ask({ key: 'msgxk_op', method: 'POST', route: '/cminmsgs/send' })).toMatchObject({ status: 403 });
    expect(await ask({ route: '/healthz' })).toMatchObject({ allow: true, principal: null, details: false }); // open, without reasons
    expect(await ask({ route: undefined })).toMatchObject({ allow: true }); // no such route: the 404 says so
  });

  it('the shared token only when given (development mode), as an admin', async () => {
    expect(await setup().ask({ key: 'dev' })).toMatchObject({ allow: false, status: 401, body: { reason: 'missing or wrong bearer token: not an API key (they start msgxk_)' } });
    expect(await setup({ dev: 'dev' }).ask({ key: 'dev', method: 'POST', route: '/cminmsgs/send' })).toMatchObject({ allow: true, principal: { via: 'dev', role: 'admin' } });
  });

  it('msgx.http.anonymous-reads opens named reads (and /healthz reasons), never an action', async () => {
    const { ask } = setup({ anonymous: ['/all/flights', '/healthz'] });
    expect(await ask({})).toMatchObject({ allow: true, principal: null, details: true });
    expect(await ask({ route: '/flights/:flid' })).toMatchObject({ allow: false, status: 401 });
    expect(await ask({ key: 'msgxk_wrong' })).toMatchObject({ allow: false, status: 401 }); // a wrong credential is refused even there
  });

  it('after 20 failures a minute from one address: 429 (a right key still passes); refusals audited once a minute per caller, the rest counted', async () => {
    const { ask, lines, counted, clock, trail } = setup();
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) {
      const a = await ask({ key: `msgxk_guess${i}` });
      statuses.push(a.allow ? 200 : a.status);
    }
    expect(statuses.filter((s) => s === 401)).toHaveLength(20);
    expect(statuses.slice(20)).toEqual([429, 429, 429, 429, 429]);
    expect((await ask({ key: 'msgxk_view' })).allow).toBe(true);
    expect(counted.filter((s) => s === 401)).toHaveLength(20);
    expect(lines()).toHaveLength(1);
    expect(lines()[0]).toMatchObject({ who: null, ip: '10.9.8.7', action: 'refused', status: 401, route: 'GET /all/flights' });
    for (let i = 0; i < 3; i++) await ask({ key: 'msgxk_view', method: 'POST', route: '/ops/replay' });
    expect(lines()).toHaveLength(2); // the first 403 of that subject
    expect(lines()[1]).toMatchObject({ who: 'key:prometheus', role: 'viewer', status: 403, route: 'POST /ops/replay' });
    clock.advance(61_000);
    await ask({ key: 'msgxk_view', method: 'POST', route: '/ops/replay' });
    expect(lines()[2]).toMatchObject({ who: 'key:prometheus', suppressed: 2 });
    await trail.close();
    expect(lines()[3]).toMatchObject({ who: null, ip: '10.9.8.7', suppressed: 24 }); // the address's held-back count, written at close
  });
});
