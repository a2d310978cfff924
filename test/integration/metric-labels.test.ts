// Unknown tags are counted once per message, after the business commit, with
// bounded labels — a rolled-back (retried) attempt counts nothing.
import { metrics } from '../../lib/runtime/metrics.ts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql } from 'kysely';
import { countAfterCommit } from '../../lib/runtime/metrics.ts';
import { testConfig } from '../support/env.ts';
import { applyMessage, refXml, testDb } from '../support/refdata-ctx.ts';

const db = testDb();
const config = testConfig();
const total = async () => ((await metrics.decodeUnknownTags.get())?.values ?? []).reduce((s, v) => s + v.value, 0);
const labels = async () => ((await metrics.decodeUnknownTags.get())?.values ?? []).map((v) => v.labels);

beforeAll(async () => {
  await sql`TRUNCATE ref_master, req_track`.execute(db);
});
afterAll(async () => db.destroy());

it('a reference message with unknown tags: attempts count nothing, the committed one counts once, labels bounded', async () => {
  const xml = refXml('GLST', 'ADD', ['<GLST><GCOD>G1</GCOD><GTNM>Gate 1</GTNM><Zz-Evil-1>x</Zz-Evil-1><BCOD>known elsewhere</BCOD></GLST>']);
  const before = await total();
  // two attempts of the same message, each rolled back (as a failed attempt would be)
  const first = await applyMessage(db, { xml, msgId: 1, now: new Date('2026-12-01T00:00:00Z'), config });
  const second = await applyMessage(db, { xml, msgId: 1, now: new Date('2026-12-01T00:00:01Z'), config });
  expect(await total()).toBe(before);
  expect(second).toEqual(first);
  expect(first).toEqual({
    outcome: 'applied',
    counts: {
      unknownTags: [
        { type: 'GLST', styp: 'ADD', tag: 'BCOD' },
        { type: 'GLST', styp: 'ADD', tag: 'other' },
      ],
    },
  });
  // the caller counts after its commit
  countAfterCommit(first.outcome === 'applied' ? first.counts : undefined);
  expect(await total()).toBe(before + 2);
  expect((await labels()).some((l) => Object.values(l).some((v) => String(v).includes('Evil')))).toBe(false);
});
