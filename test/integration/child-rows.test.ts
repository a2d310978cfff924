// Every detail row has its flight and every roster row its ledger day, checked once per statement
// (sql/migrations/0950_child_rows_per_statement.sql, docs/decisions.md "Child rows checked per
// statement"): the outcomes the foreign keys had — refused with SQLSTATE 23503 naming the table and
// key, deletes and truncates cascading, a parent key never changed.
import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DETAIL_TABLES } from '../../lib/flight/rules.ts';
import { openServices, resetDomain, type TestServices } from '../support/services.ts';

let s: TestServices;
beforeAll(async () => {
  s = await openServices();
});
afterAll(async () => {
  await s.close();
});
beforeEach(async () => {
  await resetDomain(s);
});

const flight = (flid: string) => sql`insert into flight_schd (flid, state, state_version, updated_at, created_at) values (${flid}, 'ACTIVE', 1, now(), now())`.execute(s.db);
const gate = (flid: string, ordinal = 1) => sql`insert into flight_gate (flid, ordinal, gate) values (${flid}, ${ordinal}, 'G1')`.execute(s.db);
const count = async (table: string) => Number((await sql<{ n: number }>`select count(*)::int n from ${sql.table(table)}`.execute(s.db)).rows[0].n);
/** The error a statement ends with (SQLSTATE and message), or null. */
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: { code?: string; message: string; detail?: string }) => ({ code: e.code, message: e.message, detail: e.detail }),
  );

describe('child rows checked per statement', () => {
  it('a detail row without its flight is refused (23503, table and key named); nothing of the statement stays', async () => {
    await flight('1');
    const e = await refusal(sql`insert into flight_gate (flid, ordinal, gate) values ('1', 1, 'G1'), ('404', 1, 'G2')`.execute(s.db));
    expect(e).toEqual({ code: '23503', message: expect.stringContaining('"flight_gate"'), detail: 'Key (flid)=(404) is not present in table "flight_schd".' });
    expect(await count('flight_gate')).toBe(0);
  });

  it('every detail table and the snapshot digest are covered', async () => {
    for (const table of [...DETAIL_TABLES, 'flight_snap_digest']) {
      const triggers = await sql<{ n: number }>`select count(*)::int n from pg_trigger where tgrelid = ${table}::regclass and tgname like '%parent_on_%'`.execute(s.db);
      expect(triggers.rows[0].n, table).toBe(2);
    }
    const e = await refusal(sql`insert into flight_snap_digest (flid, digest, state_version) values ('404', 'd', 1)`.execute(s.db));
    expect(e?.code).toBe('23503');
  });

  it('the flight and its detail rows in one statement (as the batch write does) are accepted', async () => {
    await sql`with f as (insert into flight_schd (flid, state, state_version, updated_at, created_at) values ('7', 'ACTIVE', 1, now(), now()) returning 1)
              insert into flight_gate (flid, ordinal, gate) select '7', 1, 'G7' from f`.execute(s.db);
    expect(await count('flight_gate')).toBe(1);
  });

  it('an update that moves a detail row to an unknown flight is refused', async () => {
    await flight('1');
    await gate('1');
    expect((await refusal(sql`update flight_gate set flid = '404'`.execute(s.db)))?.code).toBe('23503');
  });

  it('deleting or truncating flights deletes their detail rows; other flights keep theirs', async () => {
    for (const f of ['1', '2', '3']) {
      await flight(f);
      await gate(f);
      await sql`insert into flight_route_point (flid, route_kind, ordinal, apcd) values (${f}, 'ROUT', 1, 'PEK')`.execute(s.db);
    }
    await sql`delete from flight_schd where flid = '1'`.execute(s.db);
    expect((await sql<{ flid: string }>`select flid from flight_gate order by flid`.execute(s.db)).rows.map((r) => r.flid)).toEqual(['2', '3']);
    expect(await count('flight_route_point')).toBe(2);
    await sql`truncate flight_schd`.execute(s.db);
    expect(await count('flight_gate')).toBe(0);
    expect(await count('flight_route_point')).toBe(0);
  });

  it("a flight's key is never changed while detail rows may refer to it", async () => {
    await flight('1');
    expect((await refusal(sql`update flight_schd set flid = '2' where flid = '1'`.execute(s.db)))?.code).toBe('23503');
    await sql`update flight_schd set state_version = 2 where flid = '1'`.execute(s.db); // other columns: as before
  });

  it('roster rows need their ledger day; deleting the day deletes its roster', async () => {
    expect((await refusal(sql`insert into schd_gen_flid (operation_day, flid) values ('2026-12-01', '1')`.execute(s.db)))?.detail).toBe(
      'Key (operation_day)=(2026-12-01) is not present in table "schd_gen".',
    );
    await sql`insert into schd_gen (operation_day, version, last_message_id, updated_at) values ('2026-12-01', 1, 1, now()), ('2026-12-02', 1, 2, now())`.execute(s.db);
    await sql`insert into schd_gen_flid (operation_day, flid) values ('2026-12-01', '1'), ('2026-12-02', '1')`.execute(s.db);
    await sql`delete from schd_gen where operation_day = '2026-12-01'`.execute(s.db);
    expect((await sql<{ d: string }>`select operation_day::text d from schd_gen_flid`.execute(s.db)).rows.map((r) => r.d)).toEqual(['2026-12-02']);
    expect((await refusal(sql`update schd_gen set operation_day = '2026-12-03'`.execute(s.db)))?.code).toBe('23503');
  });
});
