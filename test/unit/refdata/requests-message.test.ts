import { describe, expect, it } from 'vitest';
import { buildRequestXml, isIsoDay, nextDay, parseRequestSpec } from '../../../lib/requests/message.ts';
import { resolveRequestPayload, requestsCrontab } from '../../../lib/requests/tasks.ts';
import { decodeEnvelope, payload } from '../../../lib/sis/envelope.ts';
import { child } from '../../../lib/sis/xml.ts';
import { slices } from '../../../lib/core/config.ts';
import { testConfig } from '../../support/env.ts';

const base = { sender: 'MSGX', now: new Date('2026-11-30T12:34:56Z'), timeZone: 'Asia/Shanghai', cutover: '00:00' };

describe('request XML, built then parsed back', () => {
  it('RQRD: TYPE RQRD, STYP = requested TYPE, <RQRD><RTYP>', () => {
    const env = decodeEnvelope(buildRequestXml({ ...base, seqn: 42, spec: { kind: 'RQRD', rtype: 'SLST' } }));
    expect([env.sndr, env.seqn, env.dttm, env.type, env.styp]).toEqual(['MSGX', '42', '20261130203456', 'RQRD', 'SLST']);
    const body = payload(env);
    expect(body.map((b) => b.tag)).toEqual(['RQRD']);
    expect(child(body[0], 'RTYP')?.text).toBe('SLST');
  });

  it('RQFD: STYP NONE, STDB/STDE = first and last minute of the operation day (local)', () => {
    const env = decodeEnvelope(buildRequestXml({ ...base, seqn: 999999, spec: { kind: 'RQFD', operationDay: '2026-12-01' } }));
    expect([env.type, env.styp, env.seqn]).toEqual(['RQFD', 'NONE', '999999']);
    const [rqfd] = payload(env);
    expect([child(rqfd, 'STDB')?.text, child(rqfd, 'STDE')?.text]).toEqual(['01DEC260000', '01DEC262359']);
  });

  it('RQFD honours the day cutover', () => {
    const [rqfd] = payload(decodeEnvelope(buildRequestXml({ ...base, cutover: '04:00', seqn: 1, spec: { kind: 'RQFD', operationDay: '2026-12-31' } })));
    expect([child(rqfd, 'STDB')?.text, child(rqfd, 'STDE')?.text]).toEqual(['31DEC260400', '01JAN270359']);
  });
});

describe('parseRequestSpec (POST /requests, CLI)', () => {
  const cases: [unknown, unknown][] = [
    [
      { type: 'RQRD', rtype: 'SLST' },
      { kind: 'RQRD', rtype: 'SLST' },
    ],
    [
      { type: 'RQRD', rtype: 'slst' },
      { kind: 'RQRD', rtype: 'SLST' },
    ],
    [
      { type: 'RQRD', rtype: 'RSTA' },
      { kind: 'RQRD', rtype: 'RSTA' },
    ],
    [
      { type: 'RQFD', operationDay: '2026-12-01' },
      { kind: 'RQFD', operationDay: '2026-12-01' },
    ],
  ];
  for (const [input, out] of cases) it(`accepts ${JSON.stringify(input)}`, () => expect(parseRequestSpec(input)).toEqual(out));
  const bad: unknown[] = [null, 'x', {}, { type: 'RQRD' }, { type: 'RQRD', rtype: 'FLOP' }, { type: 'RQFD', operationDay: '2026-02-30' }, { type: 'RQFD', operationDay: '01DEC26' }, { type: 'XXXX' }];
  for (const input of bad) it(`refuses ${JSON.stringify(input)}`, () => expect(parseRequestSpec(input)).toHaveProperty('error'));
});

describe('days and the evening crontab', () => {
  it('iso days', () => {
    expect([isIsoDay('2026-12-31'), isIsoDay('2026-13-01'), nextDay('2026-12-31'), nextDay('2028-02-28')]).toEqual([true, false, '2027-01-01', '2028-02-29']);
  });
  it("'tomorrow' is the operation day after the current one", () => {
    const config = testConfig({ 'msgx.airport.day-cutover': '04:00' });
    // 2026-12-01 02:00 local is still operation day 2026-11-30 → tomorrow = 2026-12-01
    expect(resolveRequestPayload({ type: 'RQFD', operationDay: 'tomorrow' }, slices(config).airport, new Date('2026-11-30T18:00:00Z'))).toEqual({ type: 'RQFD', operationDay: '2026-12-01' });
  });
  it('20:00 Asia/Shanghai is 12:00 UTC; empty = off', () => {
    expect(requestsCrontab(slices(testConfig({ 'msgx.requests.daily-schedule-at': '20:00' })), new Date('2026-12-01T00:00:00Z'))).toBe('0 12 * * * request {type:"RQFD",operationDay:"tomorrow"}');
    expect(requestsCrontab(slices(testConfig()), new Date('2026-12-01T00:00:00Z'))).toBe('');
    // a read-only (shadow) installation asks the AODB nothing
    expect(requestsCrontab(slices(testConfig({ 'msgx.requests.daily-schedule-at': '20:00', 'msgx.inbox.read-only': 'true' })), new Date('2026-12-01T00:00:00Z'))).toBe('');
  });
});
