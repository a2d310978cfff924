// The hot statements' plans at realistic sizes, as Postgres runs them. A named prepared statement
// (lib/db/statement.ts) gets its GENERIC plan after five executions — one plan for any parameter
// values — and that plan can be far worse than the plan made for the values at hand (the custom
// plan): the dispatcher's mark-sent once re-ran its row-locking subquery for every row it updated
// (quadratic in the batch). Over seeded data (100,000 outbox rows, 10,000 flights, 1,000,000
// PROC_STATE rows), each statement is PREPAREd and run under EXPLAIN ANALYZE in a rolled-back
// transaction twice: with the plan it gets in production (generic; custom for a statement declared
// PER_EXECUTION) and with its custom plan for the same values. The test fails, naming the
// statement, when the production plan
//   - processes more than WORK_FACTOR × the rows of the custom plan (+ WORK_SLACK), or
//   - reads a big table (≥ BIG_TABLE rows) with a sequential scan where the custom plan does not.
// Rows processed (each node's rows returned and rows removed by its filters, times its loops) are
// deterministic for the same data and plan: no time is measured. The planner's estimated cost is
// not the measure: a generic plan guesses 10 elements for an array parameter and 10 % of the rows
// for `limit $n`, so its estimate is wrong both ways (the quadratic mark-sent was estimated 40 ×
// cheaper than its custom plan). Parallel workers are off in this session: how many rows a worker
// reads ahead of a LIMIT is not deterministic. JIT is off, as in the sessions of lib/db/postgres.ts.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { declaredStatements } from '../../lib/db/statement.ts';
import { TEST_PG_URL } from '../support/env.ts';

const WORK_FACTOR = 4;
const WORK_SLACK = 1000;
const BIG_TABLE = 50_000;

// Realistic sizes: a backlog of 100,000 PENDING msg events over 10,000 FLIDs and 10,000 PENDING
// schd rows; 10,000 flights over 10 operation days (one gate each) with their rosters; 1,000,000
// PROC_STATE rows, the last 2,000 open and the last 5,000 not yet backfilled; 100,000 change records.
const SEED = `
truncate proc_state, proc_attempt, flight_schd, flight_change, schd_gen, schd_gen_flid, schd_snap_log, msg_event,
         flight_version_floor, flight_purge_redis, flight_history cascade;
insert into flight_schd (flid, state, state_version, operation_day, created_at, updated_at, last_msg_id, flno, maid)
select g::text, case when g % 50 = 0 then 'DELETED' else 'ACTIVE' end, 1 + g % 7, date '2026-12-01' + (g % 10),
       now() - interval '2 days', now() - interval '1 day', 1000000 - g, 'XY' || g, case when g % 20 = 1 and g > 1 then (g - 1)::text end
from generate_series(1, 10000) g;
insert into flight_gate (flid, ordinal, gate) select g::text, 1, 'G' || (g % 40) from generate_series(1, 10000) g;
insert into msg_event (event_id, target, flid, state_version, payload, state, created_at)
select i, 'msg', (1 + i % 10000)::text, 1 + i / 10000, jsonb_build_object('FLID', (1 + i % 10000)::text, 'MSG_ID', i), 'PENDING', now()
from generate_series(1, 100000) i;
insert into msg_event (event_id, target, flid, state_version, payload, state, created_at)
select 100000 + i, 'schd', i::text, 1, jsonb_build_object('FLID', i::text), 'PENDING', now() from generate_series(1, 10000) i;
select setval('msg_event_id_seq', 200000);
insert into proc_state (msg_id, identity_key, state, kind, enqueued_at, terminal_at, backfill_at, updated_at, received_at)
select i, 'k' || i, case when i > 998000 then 'PENDING' else 'SUCCEEDED' end, 'FLOP', now() - interval '1 day',
       case when i <= 998000 then now() - interval '1 day' end, case when i <= 995000 then now() - interval '1 day' end,
       now() - interval '1 day', localtimestamp
from generate_series(1, 1000000) i;
insert into flight_change (flid, state_version, msg_id, kind, op, cause, changes, created_at)
select (1 + i % 10000)::text, 1 + i / 10000, i, 'FLOP', 'UPDATE', 'MESSAGE', '{}', now() - interval '1 day' from generate_series(1, 100000) i;
insert into schd_gen select date '2026-12-01' + d, 1, 1, now() from generate_series(0, 9) d;
insert into schd_gen_flid select operation_day, flid from flight_schd;
`;
const TABLES = 'proc_state, flight_schd, flight_gate, flight_change, schd_gen, schd_gen_flid, msg_event';

const now = new Date();
const ago = (ms: number) => new Date(now.getTime() - ms);
const ids = (n: number, from = 1) => Array.from({ length: n }, (_, i) => from + i);
const flids = (n: number, from = 1) => ids(n, from).map(String);
const TERMINAL = ['SUCCEEDED', 'SKIPPED', 'DEAD'];

/** The parameters of flight.write_batch: its fixed ones empty, each collection's delete given 200 FLIDs, no row inserted. */
function writeBatchParams(text: string): unknown[] {
  const arity = Math.max(...[...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
  const deletes = new Set([...text.matchAll(/flid = any\(\$(\d+)::text\[\]\)/g)].map((m) => Number(m[1])));
  return ids(arity).map((n) => (n === 1 ? now : n === 6 || (n > 14 && deletes.has(n)) ? flids(200) : []));
}

/** The hot statements with realistic parameters: dispatchers, pump, intake, backfill, reads, lifecycle purges. */
const CASES: [name: string, params: unknown[] | ((text: string) => unknown[])][] = [
  // dispatchers
  ['outbox.freeze_msg_batch', [now, 500]],
  ['outbox.freeze_msg_batch', [now, 2000]],
  ['outbox.pending_schd_rows', [now, 1000]],
  ['outbox.mark_sent', [now, ids(2000), ids(2000).map(() => 1), ids(2000).map(() => 0), ids(2000).map(String)]],
  ['outbox.mark_failed', ['error', ids(500), ids(500).map(() => 0), ids(500).map(() => 'PENDING'), ids(500).map(() => 1), ids(500).map(() => null)]],
  ['outbox.drop_gone_schd_rows', [ids(500, 100001)]],
  ['outbox.release_backoff', [ids(500)]],
  ['outbox.next_attempt_at', ['msg', now]],
  ['outbox.next_attempt_at', ['schd', now]],
  ['outbox.delete_sent_before', [now, 1000]],
  ['outbox.oldest_pending_age', ['msg']],
  ['outbox.list_dead', [null, 100]],
  ['outbox.replay_dead', [[5, 6], null, null]],
  // pump
  ['proc_state.heads', [200]],
  ['proc_state.heads', [2000]],
  ['proc_state.identity_owners', [ids(200).map((i) => `k${i}`)]],
  ['transitions.bind_identity', [998001, 'n998001', now]],
  [
    'transitions.record_applied',
    [ids(200, 998001), ids(200).map(() => 'SUCCEEDED'), ids(200).map(() => null), ids(200).map(() => 'FLOP'), ids(200).map(() => null), now, [], ids(200).map(() => null)],
  ],
  ['transitions.mark_applied_terminal', [ids(200, 998001), now, []]],
  ['transitions.mark_terminal', [998001, 'SUCCEEDED', null, now, 'FLOP', [], null]],
  ['transitions.mark_failed', [998001, 'x', 'INFRA', 1, now, now, null, 'postgres']],
  ['flight.load_states', [flids(200)]],
  ['flight.load_states', [flids(1000)]],
  ['flight.shared_of', [flids(50)]],
  ['flight.version_floors', [flids(200)]],
  ['flight.changed_by', [ids(200, 50000)]],
  ['flight.write_batch', writeBatchParams],
  ['outbox.insert_msg_events', [now, flids(200), ids(200).map(() => 9), flids(200).map((f) => JSON.stringify({ FLID: f }))]],
  ['outbox.remove_pending_schd', [flids(200)]],
  ['ledger.load_days', [['2026-12-01']]],
  // intake, backfill
  ['transitions.enqueue', [ids(500, 1000001), ids(500).map(() => null), now, null]],
  ['proc_state.lowest_open', []],
  ['proc_state.backfill_candidates', [now, ago(3600e3), 500]],
  ['transitions.record_backfill', [ids(200, 995001), now]],
  ['transitions.record_backfill_failure', [ids(200, 995001), now, [1000, 2000]]],
  ['transitions.abandon_backfill', [ids(200, 995001), 'MISSING_ROW', now]],
  ['proc_state.next_backfill_due', [60000]],
  ['proc_state.backfill_gauges', [5]],
  ['proc_state.head_gauges', []],
  // reads
  ['flight.page_states', [false, null, 1001]],
  ['flight.page_states', [false, '5000', 1001]],
  ['flight.page_states_of_day', ['2026-12-03', false, null, 1001]],
  ['trace.outbox_events', [5000, '5000']],
  ['outbox.timeline_events', ['17']],
  ['console.list_page', ['SUCCEEDED', null, 500000, 50]],
  ['console.recent_messages', [null, 50, 'Asia/Shanghai']],
  // lifecycle purges and operator commands
  ['proc_state.open_ids', []],
  ['proc_state.purge_candidates', [0, TERMINAL, ago(3600e3), false, 1000]],
  ['proc_state.purge', [ids(1000), TERMINAL, ago(3600e3), false]],
  ['proc_state.inbox_purge_candidates', [0, TERMINAL, now, 1000]],
  ['proc_state.replay_selection', [ids(10, 998001), null, null]],
  ['transitions.replay', [ids(10, 998001), false, null, null, now]],
  ['proc_state.resume_selection', [ids(10, 998001), null]],
  ['transitions.resume_backfill', [ids(10, 998001), null, now]],
  ['flight.purge_candidates', ['', ago(30 * 86400e3), '2026-11-01', ['PENDING', 'FAILED'], 500]],
  ['flight.lock_purge_families', [flids(100), ['PENDING', 'FAILED']]],
  ['flight.purge_delete', [flids(100), ids(100).map(() => 1)]],
  ['flight.purge_changes_before', [ago(7 * 86400e3), 1000]],
  ['ledger.purgeable_days', ['2026-11-01', 10]],
  ['ledger.delete_rosters', [['2026-11-01']]],
  ['history.delete_archived_before', [now, 1000]],
  ['snap_log.delete_before', [now, '2026-11-01', 1000]],
];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Join Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Rows a plan processed: every node's rows returned and removed by its filters, times its loops. */
function work(n: PlanNode): number {
  const own = (n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Join Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0);
  return own * (n['Actual Loops'] ?? 1) + (n.Plans ?? []).reduce((a, x) => a + work(x), 0);
}

function seqScans(n: PlanNode, out = new Set<string>()): Set<string> {
  if (n['Node Type'] === 'Seq Scan' && n['Relation Name']) out.add(n['Relation Name']);
  for (const x of n.Plans ?? []) seqScans(x, out);
  return out;
}

/** A parameter as an EXECUTE argument (a quoted literal, cast by Postgres to the parameter's type). */
function literal(c: pg.Client, v: unknown): string {
  if (v === null) return 'null';
  if (v instanceof Date) return c.escapeLiteral(v.toISOString());
  if (Array.isArray(v)) return c.escapeLiteral(`{${v.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`);
  return c.escapeLiteral(String(v));
}

let c: pg.Client;
let bigTables: Set<string>;

beforeAll(async () => {
  const dir = new URL('../../lib/sql/', import.meta.url);
  for (const f of [
    'outbox/rounds',
    'outbox/operator',
    'outbox/events',
    'outbox/positions',
    'flight',
    'flight/purge',
    'proc-state',
    'transitions',
    'intake-cursor',
    'console',
    'trace',
    'ledger',
    'history',
    'snap-log',
  ])
    await import(new URL(`${f}.ts`, dir).href);
  await import('../../lib/flight/store.ts'); // declares flight.load_states / flight.write_batch
  c = new pg.Client({ connectionString: TEST_PG_URL });
  await c.connect();
  await c.query(SEED);
  await c.query(`analyze ${TABLES}`);
  await c.query('set max_parallel_workers_per_gather = 0; set jit = off');
  const r = await c.query<{ relname: string }>(`select relname from pg_class where relkind = 'r' and relnamespace = 'public'::regnamespace and reltuples >= $1`, [BIG_TABLE]);
  bigTables = new Set(r.rows.map((x) => x.relname));
}, 180_000);

afterAll(async () => {
  if (!c) return;
  await c.query(`truncate ${TABLES}, flight_history cascade`);
  await c.end();
});

describe('hot statements: the plan Postgres runs them with is as good as the plan for their values', () => {
  it('seeds big tables', () => {
    expect([...bigTables].sort()).toEqual(expect.arrayContaining(['msg_event', 'proc_state', 'flight_change']));
  });

  it('no hot statement processes many more rows, or scans a big table, where its custom plan does not', async () => {
    const declared = declaredStatements();
    const failures: string[] = [];
    const seen: string[] = [];
    for (const [i, [name, given]] of CASES.entries()) {
      const st = declared.get(name);
      if (!st) {
        failures.push(`${name}: not declared`);
        continue;
      }
      const params = typeof given === 'function' ? given(st.text) : given;
      const runs = st.plan === 'per-execution' ? 'force_custom_plan' : 'force_generic_plan';
      await c.query(`prepare plan_check_${i} as ${st.text}`);
      const args = params.length ? `(${params.map((v) => literal(c, v)).join(', ')})` : '';
      const plans: Record<string, PlanNode> = {};
      for (const mode of ['force_custom_plan', runs]) {
        await c.query(`set plan_cache_mode = ${mode}`);
        await c.query('begin');
        try {
          const r = await c.query(`explain (analyze, timing off, costs off, format json) execute plan_check_${i}${args}`);
          plans[mode] = (r.rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan;
        } finally {
          await c.query('rollback');
        }
      }
      await c.query(`deallocate plan_check_${i}`);
      const custom = plans.force_custom_plan;
      const used = plans[runs];
      const [wc, wu] = [work(custom), work(used)];
      seen.push(name);
      if (wu > WORK_FACTOR * wc + WORK_SLACK) failures.push(`${name}: its ${runs === 'force_generic_plan' ? 'generic' : 'custom'} plan processes ${wu} rows, the custom plan ${wc}`);
      const customSeq = seqScans(custom);
      for (const t of seqScans(used)) if (bigTables.has(t) && !customSeq.has(t)) failures.push(`${name}: its generic plan reads all of ${t} (the custom plan uses an index)`);
    }
    await c.query('set plan_cache_mode = auto');
    expect(seen.length).toBe(CASES.length);
    expect(failures).toEqual([]);
  });
});
