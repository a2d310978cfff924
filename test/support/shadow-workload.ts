// The workloads of the shadow tests (test/integration/shadow.test.ts): a generated one of days,
// each a SCHD DNLD creating that day's flights followed by FLOPs on them (ESTT, REMC, STND, MAXP,
// ACFT, GTDT), deterministic; and a second installation's databases (Postgres, Redis) beside the
// test's own, sharing its inbox.
import pg from 'pg';
import type { ResultSetHeader, RowDataPacket } from 'mysql2';
import { sql } from 'kysely';
import type { Inbox } from '../../lib/db/mysql.ts';
import { migrate } from '../../lib/db/migrate.ts';
import { sisMessage, type TestServices } from './services.ts';
import { TEST_PG_URL } from './env.ts';

export interface Generated {
  /** Messages in inbox order. */
  messages: string[];
  /** Index (in messages) of each day's first message. */
  dayStart: number[];
  /** FLID → index of the last FLOP/REMC that set its REMC (REMC is set by nothing else). */
  lastRemc: Map<string, number>;
  /** FLID → day index. */
  dayOf: Map<string, number>;
}

/** A small deterministic PRNG (mulberry32). */
function rng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `days` days of `flights` flights each: one DNLD, then `flops` FLOPs on that day's flights. */
export function generate(o: { days: number; flights: number; flops: number; firstFlid: number; seqn: number }): Generated {
  const next = rng(42);
  let seqn = o.seqn;
  const messages: string[] = [];
  const dayStart: number[] = [];
  const lastRemc = new Map<string, number>();
  const dayOf = new Map<string, number>();
  const msg = (type: string, styp: string, body: string) => sisMessage({ type, styp, body, seqn: ++seqn });
  for (let d = 0; d < o.days; d++) {
    const dd = String(1 + d).padStart(2, '0');
    const t = (hh: number, mm: number) => `${dd}DEC26${String(hh).padStart(2, '0')}${String(mm).padStart(2, '0')}`;
    const flids = Array.from({ length: o.flights }, (_, i) => String(o.firstFlid + d * o.flights + i));
    for (const f of flids) dayOf.set(f, d);
    dayStart.push(messages.length);
    const recs = flids.map((f, i) => {
      const n = Number(f);
      return `<FLTR><FLID>${f}</FLID><ALCD>MU</ALCD><FLNO>MU${n % 10000}</FLNO><MVIN>${i % 2 ? 'A' : 'D'}</MVIN><SODT>${t(6 + (i % 16), (i * 7) % 60)}</SODT><FLTY>W</FLTY><FLIN>D</FLIN><ACFT>${i % 3 ? '320' : '333'}</ACFT><STND>${100 + (i % 50)}</STND><MAXP>${150 + (i % 100)}</MAXP></FLTR>`;
    });
    messages.push(msg('SCHD', 'DNLD', `<SCHD><RECS>${recs.length}</RECS>${recs.join('\n')}</SCHD>`));
    for (let k = 0; k < o.flops; k++) {
      const f = flids[Math.floor(next() * flids.length)];
      const flop = (styp: string, inner: string) => msg('FLOP', styp, `<FLOP><FLID>${f}</FLID><FFID>MU-${f}</FFID>${inner}</FLOP>`);
      const r = next();
      if (r < 0.12) {
        lastRemc.set(f, messages.length);
        messages.push(flop('REMC', `<REMC>remark ${d}-${k}</REMC>`)); // never the value it had: every one changes REMC
      } else if (r < 0.45) messages.push(flop('ESTT', `<ESTT>${t(6 + (k % 16), k % 60)}</ESTT>`));
      else if (r < 0.65) messages.push(flop('STND', `<STND>${200 + (k % 40)}</STND>`));
      else if (r < 0.8) messages.push(flop('MAXP', `<MAXP>${100 + (k % 200)}</MAXP>`));
      else if (r < 0.9) messages.push(flop('ACFT', `<ACFT>${k % 2 ? '321' : '330'}</ACFT>`));
      else messages.push(flop('GTDT', `<GTDT GTNO="1"><GATE>G${k % 30}</GATE><PGOT>${t(6 + (k % 16), 0)}</PGOT><GTYP>D</GTYP></GTDT>`));
    }
  }
  return { messages, dayStart, lastRemc, dayOf };
}

/** Inserts the messages in order (multi-row INSERTs) and returns their inbox IDs, in the same order. */
export async function insertAll(inbox: Inbox, messages: readonly string[]): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < messages.length; i += 500) {
    const chunk = messages.slice(i, i + 500);
    const [r] = await inbox.query<ResultSetHeader>('INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ?', [
      chunk.map((m) => [m, '2026-12-01 08:30:00', 'VALID']),
    ]);
    // one multi-row INSERT: consecutive auto-increment IDs from insertId (innodb_autoinc_lock_mode 1/2, one statement)
    for (let k = 0; k < chunk.length; k++) ids.push(Number(r.insertId) + k);
  }
  const [rows] = await inbox.query<RowDataPacket[]>('SELECT COUNT(*) n FROM cminmsgs WHERE CMINMSGS_ID >= ? AND CMINMSGS_ID <= ?', [ids[0], ids[ids.length - 1]]);
  if (Number(rows[0].n) !== ids.length) throw new Error('inbox IDs of the inserted rows are not consecutive');
  return ids;
}

/** A database URL beside the test's own: msgx_test…<suffix>. */
export const siblingUrl = (suffix: string) => TEST_PG_URL.replace(/\/([^/]+)$/, (_, db) => `/${db}${suffix}`);

/** A new, empty database (dropped first when it exists); migrated unless `empty`. */
export async function freshDatabase(url: string, o: { empty?: boolean } = {}): Promise<void> {
  const admin = new pg.Client({ connectionString: url.replace(/\/[^/]+$/, '/postgres') });
  await admin.connect();
  const db = new URL(url).pathname.slice(1);
  try {
    await admin.query(`drop database if exists "${db}" with (force)`);
    await admin.query(`create database "${db}"`);
  } finally {
    await admin.end();
  }
  if (!o.empty) await migrate(url);
}

/** Empties an installation's Postgres (pipeline and domain), its Redis db, and its shadow row. */
export async function resetInstallation(s: TestServices): Promise<void> {
  const r = await sql<{ t: string }>`select tablename t from pg_tables where schemaname = 'public' and tablename not in ('pgmigrations', 'intake_cursor', 'shadow_intake')`.execute(s.db);
  await sql.raw(`truncate ${r.rows.map((x) => `"${x.t}"`).join(', ')} cascade`).execute(s.db);
  await sql`update intake_cursor set watermark = 0, full_scan_from = null, full_scan_at = null, gap_id = null, gap_seen_at = null, gaps = '[]', passed_gaps = '[]'`.execute(s.db);
  await sql`update shadow_intake set started_after = null, lost = '[]'`.execute(s.db);
  await sql`delete from graphile_worker._private_jobs`.execute(s.db);
  await s.redis.flushdb();
}
