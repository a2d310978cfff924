// The batched write limit (B1, B2, the smoke): what this Postgres does with the rows the pump
// writes, written the fastest plain way, measured in the same run as the pump. Each batch is ONE
// transaction of one multi-row statement per table — `unnest` of array parameters built before
// the clock starts, named (prepared) statements — on one connection:
//   B1 (batchesOfFlops): per batch of K FLOPs, the rows the flight planner (lib/flight/plan.ts,
//      pure) says the batch writes — flight_schd rows, the changed collections (deleted, then
//      inserted), msg events and state rows (one msg_event insert), change records — and every
//      message's terminal proc_state mark with its identity key, written ONCE (the pump writes it
//      twice: its outcome and identity in the business transaction, its terminal state after the
//      mirror step, INV-10), with the dispatchers' and backfill's wake-up.
//   B2 (snapshotRows): the rows a first apply left on empty stores (every table it writes, read
//      back as array literals), truncated, then written again in one transaction.
// The figure is wall time, with the CPU time of the connection's Postgres backend beside it
// (/proc of pg_backend_pid(): null when the server is not on this machine).
import pg from 'pg';
import { connectionSettings } from '../../lib/db/postgres.ts';
import { DISPATCH_TASK, TASK } from '../../lib/core/tasks.ts';
import type { AirportConfig } from '../../lib/core/config.ts';
import type { FlightCommand } from '../../lib/flight/plan.ts';
import { FlightPlan, Loaded } from '../../lib/flight/plan.ts';
import { isEmpty } from '../../lib/flight/overlay.ts';
import { changeArrays, flightTableRows, loadStates, outboxArrays, withStateRows, type TableRows } from '../../lib/flight/store.ts';
import { pgArray } from '../../lib/db/statement.ts';
import type { Logger } from 'pino';
import { sql } from 'kysely';
import { systemClock } from '../../lib/core/clock.ts';
import { loadConfig, slices } from '../../lib/core/config.ts';
import { decodeFlightCommand } from '../../lib/flight/handlers.ts';
import { intakeRound } from '../../lib/pipeline/intake.ts';
import { tick } from '../../lib/pipeline/pump/loop.ts';
import { decodeEnvelope, identityKey } from '../../lib/sis/envelope.ts';
import { BENCH_INBOX, BENCH_PG, BENCH_REDIS, type Bench, emptyAll, processCpuSeconds, pumpDeps } from './setup.ts';

/** One statement of a limit transaction: its text (named by `name`) and its parameters. */
export interface Write {
  name: string;
  text: string;
  values: unknown[];
  rows: number;
}

/** The limit's figures: seconds for the whole workload (wall), the backend's CPU seconds, rows per table. */
export interface Limit {
  messages: number;
  seconds: number;
  backendCpuSeconds: number | null;
  perSecond: number;
  rows: Record<string, number>;
  /** Wall seconds per table (and commit), client-observed. */
  secondsPerTable: Record<string, number>;
  transactions: number;
}

/** `insert into t (cols) select * from unnest($1::type[], …)` of one table's column arrays. */
function insertRows(t: TableRows, suffix = ''): Write {
  const cols = t.columns.map((c) => c.name).join(', ');
  const args = t.columns.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ');
  return {
    name: `limit_${t.table}_${t.discriminator?.value ?? ''}_insert`.toLowerCase(),
    text: `insert into ${t.table} (${cols}) select * from unnest(${args}) ${suffix}`,
    values: t.arrays,
    rows: t.rows,
  };
}

/** The writes of one batch of FLOPs: flight rows, collections, outbox, change records, proc_state. */
function flopWrites(batch: FlopBatch, now: Date): Write[] {
  const { plan } = batch;
  const [main, ...collections] = flightTableRows(plan.flights);
  const update = main.columns
    .filter((c) => c.name !== 'flid' && c.name !== 'created_at')
    .map((c) => `${c.name} = excluded.${c.name}`)
    .join(', ');
  const out: Write[] = [insertRows(main, `on conflict (flid) do update set ${update}`)];
  for (const c of collections) {
    const replaced = c.replaced === undefined || c.replaced === '{}' ? 0 : c.replaced.split(',').length;
    const disc = c.discriminator ? ` and ${c.discriminator.column} = '${c.discriminator.value}'` : '';
    if (replaced > 0)
      out.push({
        name: `limit_${c.table}_${c.discriminator?.value ?? ''}_delete`.toLowerCase(),
        text: `delete from ${c.table} where flid = any($1::text[])${disc}`,
        values: [c.replaced],
        rows: replaced,
      });
    if (c.rows > 0) out.push(insertRows(c));
  }
  const outbox = withStateRows(plan.events, plan.flights);
  out.push({
    name: 'limit_msg_event',
    text: `insert into msg_event (event_id, target, flid, state_version, payload, created_at)
      select x.id, x.target, x.flid, x.ver,
             case when x.target = 'msg' then x.p || jsonb_build_object('EVENT_ID', x.id) else jsonb_build_object('FLID', x.flid, 'STATE_VERSION', x.ver) end, $1::timestamptz
      from (select nextval('msg_event_id_seq') as id, u.* from unnest($2::text[], $3::text[], $4::integer[], $5::jsonb[]) with ordinality as u(target, flid, ver, p, ord) order by ord) x
      on conflict (target, flid) where target in ('schd', 'state') do update set event_id = excluded.event_id, state_version = excluded.state_version, payload = excluded.payload, state = 'PENDING', created_at = excluded.created_at`,
    values: [now, ...outboxArrays(outbox)],
    rows: outbox.length,
  });
  const ch = plan.changes;
  out.push({
    name: 'limit_flight_change',
    text: 'insert into flight_change (flid, state_version, msg_id, kind, op, cause, changes, created_at) select * from unnest($1::text[], $2::integer[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::json[], $8::timestamptz[])',
    values: [...changeArrays(ch)],
    rows: ch.length,
  });
  out.push(procStateMarks(batch.msgIds, batch.kinds, batch.identities, now));
  return out;
}

/** Every message's terminal mark (SUCCEEDED, its kind, its identity key (INV-6), the backfill intent) and the wake-ups, one statement. */
function procStateMarks(msgIds: readonly number[], kinds: readonly string[], identities: readonly string[], now: Date): Write {
  return {
    name: 'limit_proc_state',
    text: `with t as (update proc_state p set state = 'SUCCEEDED', applied_state = 'SUCCEEDED', kind = u.kind, identity_key = u.identity_key, terminal_at = $3::timestamptz,
                                          backfill_next_at = $3::timestamptz, updated_at = $3::timestamptz
                      from unnest($1::bigint[], $2::text[], $5::text[]) as u(msg_id, kind, identity_key) where p.msg_id = u.msg_id returning 1)
           select (select count(*) from t) as n, msgx_wake($4::text[]) as woken`,
    values: [pgArray(msgIds), pgArray(kinds), now, pgArray([DISPATCH_TASK.msg, DISPATCH_TASK.schd, DISPATCH_TASK.state, TASK.backfill]), pgArray(identities)],
    rows: msgIds.length,
  };
}

/** Runs each batch's writes as one transaction, one after another; wall and backend CPU over all of them. */
export async function runLimit(url: string, batches: readonly Write[][], messages: number): Promise<Limit> {
  const c = new pg.Client(connectionSettings(url, 'bench-write-limit'));
  await c.connect();
  try {
    const pid = Number((await c.query('select pg_backend_pid() as p')).rows[0].p);
    const rows: Record<string, number> = {};
    const tableOf = (w: Write) => w.name.replace(/^limit_(snapshot_)?/, '').replace(/_+(insert|delete)$/, '');
    for (const w of batches.flat()) rows[tableOf(w)] = (rows[tableOf(w)] ?? 0) + w.rows;
    const per: Record<string, number> = {};
    const timed = async (name: string, q: () => Promise<unknown>) => {
      const t0 = performance.now();
      await q();
      per[name] = (per[name] ?? 0) + (performance.now() - t0) / 1000;
    };
    const cpu0 = processCpuSeconds(pid);
    const t = performance.now();
    for (const writes of batches) {
      await c.query('begin');
      for (const w of writes) await timed(tableOf(w), () => c.query({ name: w.name, text: w.text, values: w.values }));
      await timed('commit', () => c.query('commit'));
    }
    const seconds = (performance.now() - t) / 1000;
    const cpu1 = processCpuSeconds(pid);
    return {
      messages,
      seconds,
      backendCpuSeconds: cpu0 === null || cpu1 === null ? null : cpu1 - cpu0,
      perSecond: messages / seconds,
      rows,
      secondsPerTable: Object.fromEntries(Object.entries(per).map(([k, v]) => [k, +v.toFixed(3)])),
      transactions: batches.length,
    };
  } finally {
    await c.end();
  }
}

// ---------------------------------------------------------------------------------------------
// B1: batches of FLOPs

/** One batch of FLOPs: its messages (in order) and what the planner says it writes. */
export interface FlopBatch {
  msgIds: number[];
  kinds: string[];
  identities: string[];
  plan: ReturnType<FlightPlan['result']>;
}

/**
 * The planner's writes for `cmds` in batches of `k`, from the stored states of `flids` (the
 * stores as the pump finds them), each batch planned on the states the one before left.
 */
export async function planFlopBatches(
  b: Bench,
  airport: Pick<AirportConfig, 'timezone' | 'dayCutover'>,
  flids: readonly string[],
  cmds: readonly { msgId: number; styp: string; identity: string; cmd: FlightCommand; now: Date }[],
  k: number,
): Promise<FlopBatch[]> {
  const loaded = new Loaded();
  for (const [f, s] of await loadStates(b.db, flids, airport.timezone)) loaded.states.set(f, s);
  for (const f of flids) loaded.sharedByMaster.set(f, []);
  const out: FlopBatch[] = [];
  for (let i = 0; i < cmds.length; i += k) {
    const plan = new FlightPlan(loaded, { timeZone: airport.timezone, cutover: airport.dayCutover });
    const part = cmds.slice(i, i + k);
    for (const c of part) {
      const m = { msgId: c.msgId, kind: `FLOP/${c.styp}`, type: 'FLOP', styp: c.styp, now: c.now, cmd: c.cmd };
      if (!isEmpty(plan.needs(m))) throw new Error(`write limit: message ${c.msgId} addresses a flight not loaded`);
      plan.apply(m);
    }
    out.push({ msgIds: part.map((c) => c.msgId), kinds: part.map((c) => `FLOP/${c.styp}`), identities: part.map((c) => c.identity), plan: plan.result() });
    for (const [f, s] of plan.states()) if (s) loaded.states.set(f, s);
  }
  return out;
}

/**
 * The batched write limit of a FLOP workload in batches of `k`, on fresh stores: the inbox holds
 * `snapshots` (their flights 1..`flights`, applied by the pump here, untimed) and then `flops`,
 * all enqueued; the FLOPs' batches are planned and written.
 */
export async function flopWorkloadLimit(b: Bench, w: { snapshots: readonly string[]; flops: readonly string[]; flights: number; k: number }, log: Logger): Promise<Limit> {
  await emptyAll(b);
  const rows = [...w.snapshots, ...w.flops];
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500);
    await b.inbox.query(`INSERT INTO cminmsgs (CMINMSGS_CLOB_MSG, CMINMSGS_DATE_RECEIVED, CMINMSGS_STATUS) VALUES ${chunk.map(() => "(?, '2026-12-01 08:00:00', 'VALID')").join(',')}`, chunk);
  }
  const intake = slices(loadConfig({ DATABASE_URL: BENCH_PG, INBOX_URL: BENCH_INBOX, REDIS_URL: BENCH_REDIS, MSGX_PIPELINE_CLAIM_BATCH: '5000' })).intake;
  while ((await intakeRound({ db: b.db, inbox: b.inbox, clock: systemClock, intake, log })).enqueued.length > 0);
  const deps = pumpDeps(b, { log });
  for (const _ of w.snapshots) await tick(deps);
  await sql`vacuum analyze proc_state`.execute(b.db);
  const ids = (await sql<{ msg_id: number }>`select msg_id from proc_state where state = 'PENDING' order by msg_id`.execute(b.db)).rows.map((r) => Number(r.msg_id));
  if (ids.length !== w.flops.length) throw new Error(`write limit: ${ids.length} of ${w.flops.length} messages open`);
  const airport = slices(b.config).airport;
  const now = systemClock.now();
  const cmds = w.flops.map((x, i) => {
    const env = decodeEnvelope(x);
    return { msgId: ids[i], styp: env.styp, identity: identityKey(env, b.config['msgx.identity.include-day-boundary']), cmd: decodeFlightCommand(env, airport), now };
  });
  const flids = Array.from({ length: w.flights }, (_, i) => String(i + 1));
  return flopWriteLimit(BENCH_PG, await planFlopBatches(b, airport, flids, cmds, w.k), now);
}

/** The batched write limit of these FLOP batches (msg/s), on the bench's database as it is now. */
export async function flopWriteLimit(url: string, batches: readonly FlopBatch[], now: Date): Promise<Limit> {
  return runLimit(
    url,
    batches.map((x) => flopWrites(x, now)),
    batches.reduce((n, x) => n + x.msgIds.length, 0),
  );
}

// ---------------------------------------------------------------------------------------------
// B2: the rows a snapshot's first apply wrote

/** The tables a snapshot's first apply writes besides proc_state (its one row is marked, as the pump does). */
export const SNAPSHOT_TABLES = [
  'flight_schd',
  'flight_gate',
  'flight_checkin',
  'flight_carousel',
  'flight_chute',
  'flight_planned_stand',
  'flight_chock',
  'flight_delay',
  'flight_airbridge',
  'flight_pushback',
  'flight_tractor',
  'flight_route_point',
  'flight_raw_fragment',
  'flight_snap_digest',
  'flight_change',
  'msg_event',
  'schd_gen',
  'schd_gen_flid',
  'schd_snap_log',
] as const;

/**
 * The rows of SNAPSHOT_TABLES as one insert each (array literals read back from Postgres, so
 * every value is what was stored), for the message `msgId` that wrote them.
 */
export async function snapshotWrites(b: Bench, msgId: number, now: Date): Promise<Write[]> {
  const out: Write[] = [];
  for (const table of SNAPSHOT_TABLES) {
    const cols = (
      await b.pool.query<{ name: string; type: string }>(
        `select attname as name, format_type(atttypid, atttypmod) as type from pg_attribute
          where attrelid = $1::regclass and attnum > 0 and not attisdropped and attgenerated = '' order by attnum`,
        [table],
      )
    ).rows;
    const arrays = (await b.pool.query(`select ${cols.map((c) => `array_agg(${c.name})::text as ${c.name}`).join(', ')}, count(*)::int as n from ${table}`)).rows[0];
    if (arrays.n === 0) continue;
    out.push({
      name: `limit_snapshot_${table}`,
      text: `insert into ${table} (${cols.map((c) => c.name).join(', ')}) select * from unnest(${cols.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')})`,
      values: cols.map((c) => arrays[c.name]),
      rows: arrays.n,
    });
  }
  out.push(procStateMarks([msgId], ['SCHD/DNLD'], [`snapshot-${msgId}`], now));
  return out;
}

/** Empties SNAPSHOT_TABLES and opens the message again (the limit then writes what the apply wrote). */
export async function emptySnapshotTables(b: Bench, msgId: number): Promise<void> {
  await b.pool.query(`truncate ${SNAPSHOT_TABLES.join(', ')}`);
  await b.pool.query(`update proc_state set state = 'PENDING', applied_state = null, identity_key = null, terminal_at = null, backfill_next_at = null where msg_id = $1`, [msgId]);
  await b.pool.query(`vacuum analyze ${SNAPSHOT_TABLES.join(', ')}, proc_state`);
}
