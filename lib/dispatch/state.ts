// state topic round (docs/consumers.md "state topic"): up to msgx.msg.batch due PENDING state
// rows (one per FLID, rewritten with every new version) → the flights' complete states from the
// consistent bulk loader (readFlights: one statement, one snapshot) → one record per row, key =
// FLID, value = the state exactly as GET /flights/:flid answers it (toJson) or a Kafka tombstone
// (null) when the flight is DELETED or gone (purged), headers EVENT_ID and STATE_VERSION
// (lib/contract/kafka.ts stateRecord). Acknowledged rows are marked SENT in the round's
// transaction, under the round's advisory lock (one round at a time across instances).
// Decisions:
//   - a row is sent only if it still holds the event id it was read with AFTER the states were
//     read (unchangedStateRows): then the state read is the row's version (every version change
//     rewrites the row in the same transaction: flight.write_batch, the history purge), so an
//     EVENT_ID always names one content; a row rewritten meanwhile is left for the next round;
//   - per FLID the records go out in STATE_VERSION order: one row per FLID, rounds never
//     overlap, and a later round reads a later snapshot (a resend after a crash repeats the same
//     version, never an older one);
//   - a state larger than msgx.schd.max-record-bytes goes DEAD at once ("too-large"), as on schd;
//   - sends stop at the first failure: the failed chunk backs off (DEAD after max attempts, none
//     counted while Kafka is unreachable or the topic is missing), later chunks stay untouched;
//     per FLID nothing waits, since the row's next version replaces the failed one;
//   - a lost topic (missing, not compacted, below the recorded offsets) is re-seeded by the
//     topic check (lib/watches/state-topic.ts).
import { readFlights } from '../flight/read.ts';
import { toJson } from '../flight/state.ts';
import { stateRecord, type StateRecord } from '../contract/kafka.ts';
import { drain, inRound, retryPolicy, type DispatchDeps, type DrainNext, type RoundResult } from './msg.ts';
import { markFailed, pendingRows, tryRoundLock, unchangedStateRows, type SchdRow } from './outbox.ts';
import { chunkBySize } from './plan.ts';
import { sendRound } from './send.ts';

export interface StateRoundResult extends RoundResult {
  /** Rows rewritten after they were read (left for the next round). */
  overtaken: number;
  /** Tombstones among the records sent. */
  tombstones: number;
}

const recordBytes = (r: StateRecord) => Buffer.byteLength(r.key) + (r.value === null ? 0 : Buffer.byteLength(r.value)) + 64;

export async function stateRound(d: DispatchDeps): Promise<StateRoundResult> {
  const topic = d.dispatch.stateTopic;
  const maxBytes = d.dispatch.maxRecordBytes;
  return inRound(d, 'state', async (tx) => {
    const res: StateRoundResult = { busy: false, picked: 0, sent: 0, failed: 0, dead: 0, overtaken: 0, tombstones: 0 };
    if (!(await tryRoundLock(tx, 'state'))) return { ...res, busy: true };
    const rows = await pendingRows(tx, 'state', d.clock.now(), d.dispatch.msgBatch);
    if (rows.length === 0) return res;

    const states = await readFlights(
      d.db,
      rows.map((r) => r.flid),
      d.dispatch.timezone,
    );
    const unchanged = await unchangedStateRows(
      tx,
      rows.map((r) => r.eventId),
    );
    const out: { row: SchdRow; record: StateRecord }[] = [];
    const mismatched: SchdRow[] = [];
    for (const row of rows) {
      if (!unchanged.has(row.eventId)) {
        res.overtaken++;
        continue;
      }
      const s = states.get(row.flid);
      if (s && s.STATE_VERSION !== row.stateVersion) {
        mismatched.push(row); // cannot happen while every version change rewrites the row; never sent
        continue;
      }
      const value = s && s.STATE === 'ACTIVE' ? JSON.stringify(toJson(s)) : null;
      out.push({ row, record: stateRecord({ flid: row.flid, eventId: row.eventId, stateVersion: row.stateVersion, state: value }) });
    }
    // picked counts the rows this round settles (sent, failed, DEAD): rows overtaken meanwhile
    // do not keep the drain looping, the rewrite woke the dispatcher anyway
    res.picked = out.length + mismatched.length;

    const policy = retryPolicy(d.dispatch);
    const oversize = out.filter((o) => recordBytes(o.record) > maxBytes);
    const forcedDead = [
      ...oversize.map((o) => ({ row: o.row, why: `too-large: complete state over msgx.schd.max-record-bytes=${maxBytes}` })),
      ...mismatched.map((row) => ({ row, why: 'state version differs from the outbox row (a version change without its state row)' })),
    ];
    for (const f of forcedDead) {
      const dead = await markFailed(tx, [{ eventId: f.row.eventId, attemptsBefore: f.row.attempts, next: { state: 'DEAD', attempts: f.row.attempts + 1, nextAttemptAt: null } }], f.why);
      res.dead += dead.length;
      d.log.error({ topic, flid: f.row.flid, eventId: f.row.eventId, stateVersion: f.row.stateVersion }, `state dispatch: ${f.why}; DEAD`);
    }
    const sendable = out.filter((o) => recordBytes(o.record) <= maxBytes);

    const chunks = chunkBySize(
      sendable.map((o) => recordBytes(o.record)),
      maxBytes,
    ).map((idx) => idx.map((i) => sendable[i]));
    const r = await sendRound(
      tx,
      d,
      'state',
      topic,
      chunks.map((chunk) => ({ records: chunk.map((o) => o.record), carries: chunk.map((o) => [o.row]) })),
      policy,
    );
    res.tombstones += chunks.slice(0, r.done).reduce((n, chunk) => n + chunk.filter((o) => o.record.value === null).length, 0);
    res.sent = r.sent;
    res.overtaken += r.overtaken;
    res.failed = r.failed;
    res.dead += r.dead;
    return res;
  });
}

export const stateDrain = (d: DispatchDeps, budgetMs: number, signal?: AbortSignal): Promise<DrainNext> => drain(stateRound, 'state', d, budgetMs, signal);
