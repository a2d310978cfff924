// FLIDs compare byte by byte whatever the database's collation (sql/migrations/0960_flid_collate_c.sql,
// docs/decisions.md "FLIDs compare byte by byte"): every FLID and MAID column is COLLATE "C", and
// the flight list's order is the bytes' order.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openServices, resetDomain, type TestServices } from '../support/services.ts';

let s: TestServices;
beforeAll(async () => {
  s = await openServices();
  await resetDomain(s);
});
afterAll(async () => {
  await s.close();
});

describe('FLID collation', () => {
  it('every text column named flid or maid is COLLATE "C"', async () => {
    const cols = (
      await sql<{ col: string; coll: string | null }>`select table_name || '.' || column_name as col, collation_name as coll from information_schema.columns
        where table_schema = 'public' and data_type = 'text' and column_name in ('flid', 'maid') order by 1`.execute(s.db)
    ).rows;
    expect(cols.length).toBeGreaterThanOrEqual(21);
    expect(cols.filter((c) => c.coll !== 'C')).toEqual([]);
  });

  it('flights sort by the bytes of their FLIDs, and a parameter compares the same way', async () => {
    for (const flid of ['a1', 'B2', '_3', '10', '9']) await sql`insert into flight_schd (flid, state, state_version, updated_at, created_at) values (${flid}, 'ACTIVE', 1, now(), now())`.execute(s.db);
    const order = (await sql<{ flid: string }>`select flid from flight_schd order by flid`.execute(s.db)).rows.map((r) => r.flid);
    expect(order).toEqual(['10', '9', 'B2', '_3', 'a1']);
    const after = (await sql<{ flid: string }>`select flid from flight_schd where flid > ${'B2'} order by flid`.execute(s.db)).rows.map((r) => r.flid);
    expect(after).toEqual(['_3', 'a1']);
  });
});
