// The snapshot digest's decisions (lib/flight/digest.ts), as tables: when a record may skip the
// merge, which digests a batch stores, and the property both rely on — a flight a snapshot record
// left behind is a fixed point of that record.
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { DIGEST_FORMAT, digestsToStore, recordDigest, unchangedRecords, type StoredDigest } from '../../../lib/flight/digest.ts';
import { applyMafl, applySnapshotRecord, deleteFlight, type MergeContext } from '../../../lib/flight/merge.ts';
import type { Patch } from '../../../lib/flight/decode.ts';
import type { FlightState } from '../../../lib/flight/state.ts';

const ctx: MergeContext = { msgId: 7, now: new Date('2026-12-01T00:00:00Z'), timeZone: 'Asia/Shanghai', cutover: '00:00' };
const DAY = '2026-12-09';
const patch: Patch = { FLNO: 'XX1', SODT: '2026-12-09T08:00:00+08:00', ACFT: '320', GTDT: [{ GTNO: 1, GATE: 'G1' }], STND: null };
const BASIS = 'Asia/Shanghai|00:00|';
const SOURCE = '<FLTR><FLID>1</FLID><FLNO>XX1</FLNO><ACFT>320</ACFT><GTDT GTNO="1"><GATE>G1</GATE></GTDT></FLTR>';
const rec = (flid: string, p: Patch = patch, source = SOURCE) => ({ flid, patch: p, digest: recordDigest(source, BASIS) });

describe('recordDigest: of the record as the message carries it, with what else decides its decoding', () => {
  it.each([
    ['the same text again', SOURCE, BASIS, true],
    ['the same content written differently (a missed skip, never a wrong one)', SOURCE.replace('<FLNO>', '\n  <FLNO>'), BASIS, false],
    ['a value changed', SOURCE.replace('320', '321'), BASIS, false],
    ['a field more', SOURCE.replace('</FLTR>', '<REMC>X</REMC></FLTR>'), BASIS, false],
    ['another time zone', SOURCE, 'Europe/Paris|00:00|', false],
    ['another day cutover', SOURCE, 'Asia/Shanghai|04:00|', false],
    ['a rule override', SOURCE, 'Asia/Shanghai|00:00|ignore REMC in SCHD/*', false],
  ] as [string, string, string, boolean][])('%s: same digest %s', (_, text, basis, same) => {
    expect(recordDigest(text, basis) === recordDigest(SOURCE, BASIS)).toBe(same);
  });
  it('is the SHA-1 (base64) of the format, the basis and the text, each line-ended: the value digests stored by earlier versions have', () => {
    const streamed = createHash('sha1').update(`${DIGEST_FORMAT}\n${BASIS}\n`).update(SOURCE).digest('base64');
    expect(recordDigest(SOURCE, BASIS)).toBe(streamed);
    expect(recordDigest('<FLTR><FLID>1</FLID></FLTR>', 'UTC|00:00|')).toBe('bIGmEB4amI34Ti0dgUYYI3nMV98=');
  });
});

describe('unchangedRecords: a record is skipped only while its flight is still what that record left', () => {
  const stored = (o: Partial<StoredDigest> = {}): StoredDigest => ({ digest: recordDigest(SOURCE, BASIS), digestVersion: 3, stateVersion: 3, state: 'ACTIVE', operationDay: DAY, maid: null, ...o });
  it.each([
    ['same digest, flight still at the version it was taken at', stored(), rec('1'), true],
    ['changed since (FLOP, ADFT, operator, restore to another state): version moved on', stored({ stateVersion: 4 }), rec('1'), false],
    ['the record says something else', stored(), rec('1', { ...patch, ACFT: '321' }, SOURCE.replace('320', '321')), false],
    ['deleted since (its version moved on as well)', stored({ state: 'DELETED', stateVersion: 4 }), rec('1'), false],
    ['deleted at that very version (never stored so, but never skipped)', stored({ state: 'DELETED' }), rec('1'), false],
    ['the flight belongs to another day now', stored({ operationDay: '2026-12-10' }), rec('1'), false],
    ['no stored digest (purged, or never carried)', undefined, rec('1'), false],
    ['a record without a digest', stored(), { flid: '1', patch }, false],
  ] as [string, StoredDigest | undefined, { flid: string; patch: Patch; digest?: string }, boolean][])('%s → skipped: %s', (_, s, r, skipped) => {
    const out = unchangedRecords([r], DAY, new Map(s ? [['1', s]] : []));
    expect(out.has('1')).toBe(skipped);
    if (skipped) expect(out.get('1')).toEqual({ day: DAY, version: 3 });
  });

  it('keeps the MAID of a skipped flight (its mirror scope) and never skips a FLID carried twice', () => {
    const s = new Map([
      ['1', stored({ maid: '9' })],
      ['2', stored()],
    ]);
    expect(unchangedRecords([rec('1'), rec('2'), rec('2')], DAY, s)).toEqual(new Map([['1', { day: DAY, version: 3, maid: '9' }]]));
  });
});

describe('digestsToStore: the digest of each record whose flight the batch leaves ACTIVE on the day', () => {
  const state = (o: Partial<FlightState> = {}): FlightState => ({ FLID: '1', STATE: 'ACTIVE', STATE_VERSION: 5, OPERATION_DAY: DAY, UPDATED_AT: 'x', LAST_MSG_ID: 7, data: {}, MAFL: [], ...o });
  it.each([
    ['left ACTIVE on the day', state(), false, [{ flid: '1', digest: recordDigest(SOURCE, BASIS), version: 5 }]],
    ['left DELETED', state({ STATE: 'DELETED' }), false, []],
    ['left on another day', state({ OPERATION_DAY: '2026-12-10' }), false, []],
    ['not in the batch', null, false, []],
    ['skipped as unchanged (its digest stays)', state(), true, []],
    ['skipped, then moved on by the same message (its MAFL re-derived): at the new version', state({ STATE_VERSION: 6 }), true, [{ flid: '1', digest: recordDigest(SOURCE, BASIS), version: 6 }]],
  ] as [string, FlightState | null, boolean, unknown[]][])('%s', (_, s, skipped, want) => {
    const final = new Map(s ? [['1', s]] : []);
    expect(digestsToStore([rec('1')], DAY, final, new Map(skipped ? [['1', { day: DAY, version: 5 }]] : []))).toEqual(want);
  });
});

describe('the property the skip relies on: a flight a snapshot record left is a fixed point of that record', () => {
  const active = applySnapshotRecord(undefined, '1', { ...patch, ACFT: '737', REMC: 'old' }, DAY, ctx).state;
  it.each([
    ['a new flight', undefined],
    ['an ACTIVE flight with other data', active],
    ['a DELETED flight (revived)', deleteFlight(active, ctx).state],
    ['a flight of another day', { ...active, OPERATION_DAY: '2026-12-10' }],
  ] as [string, FlightState | undefined][])('%s: the same record again changes nothing, also after a MAFL change in between', (_, prev) => {
    const once = applySnapshotRecord(prev, '1', patch, DAY, ctx).state;
    expect(applySnapshotRecord(once, '1', patch, DAY, { ...ctx, msgId: 8 }).changed).toEqual([]);
    const mafl = applyMafl(once, [{ FLID: '2', FLNO: 'XX2' }], ctx).state;
    expect(mafl.MAFL).toEqual([{ FLID: '2', FLNO: 'XX2' }]);
    expect(applySnapshotRecord(mafl, '1', patch, DAY, { ...ctx, msgId: 8 }).changed).toEqual([]);
  });
});
