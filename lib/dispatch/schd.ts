// schd topic round (docs/consumers.md "schd topic"): up to msgx.schd.flush-limit due PENDING
// schd rows → their complete states from the consistent bulk loader (readFlights: one
// statement, hence one snapshot) → records {"SCHD":{"RECS":n,"FLTR":[…]}} of at most
// msgx.schd.max-record-bytes, fixed key, one send per record (Kafka's size limit applies to a
// partition's whole batch, so records are not combined into one request).
// Decisions:
//   - a row whose flight is missing or DELETED is removed (deletions go only to msg; the delete
//     path removes PENDING rows the same way; a revival upserts a fresh row);
//   - a state that alone exceeds max-record-bytes goes DEAD at once ("too-large", visible in
//     msgx_dispatch_dead{target="schd"}): sending it would fail the same way every time and
//     take its neighbours down with it; a newer version of the flight resets it to PENDING;
//   - SENT is conditional on (event_id read, version sent): a row rewritten meanwhile stays
//     PENDING and goes out in a later round;
//   - sends stop at the first failure: rows of acknowledged records are SENT, the failed
//     record's rows back off (DEAD after max attempts), later records are untouched.
import { readFlights } from '../flight/read.ts';
import { toJson } from '../flight/state.ts';
import { drain, inRound, retryPolicy, type DispatchDeps, type DrainNext, type RoundResult } from './msg.ts';
import { dropGoneSchdRows, markFailed, pendingRows, tryRoundLock, type SchdRow } from './outbox.ts';
import { splitSchd } from './plan.ts';
import { sendRound } from './send.ts';

/** Key of every schd record: one partition, records in order (consumers still decide by STATE_VERSION). */
export const SCHD_KEY = 'schd';

export interface SchdRoundResult extends RoundResult {
  /** Rows removed because their flight is gone or deleted. */
  gone: number;
  /** Rows sent but rewritten meanwhile (left PENDING). */
  overtaken: number;
  records: number;
}

export async function schdRound(d: DispatchDeps): Promise<SchdRoundResult> {
  const topic = d.dispatch.schdTopic;
  const maxBytes = d.dispatch.maxRecordBytes;
  return inRound(d, 'schd', async (tx) => {
    const res: SchdRoundResult = { busy: false, picked: 0, sent: 0, failed: 0, dead: 0, gone: 0, overtaken: 0, records: 0 };
    if (!(await tryRoundLock(tx, 'schd'))) return { ...res, busy: true };
    const rows = await pendingRows(tx, 'schd', d.clock.now(), d.dispatch.schdFlushLimit);
    res.picked = rows.length;
    if (rows.length === 0) return res;

    const states = await readFlights(
      d.db,
      rows.map((r) => r.flid),
      d.dispatch.timezone,
    );
    const live: { row: SchdRow; version: number; json: string }[] = [];
    const gone: number[] = [];
    for (const row of rows) {
      const s = states.get(row.flid);
      if (!s || s.STATE !== 'ACTIVE') gone.push(row.eventId);
      else live.push({ row, version: s.STATE_VERSION, json: JSON.stringify(toJson(s)) });
    }
    res.gone = await dropGoneSchdRows(tx, gone);

    const policy = retryPolicy(d.dispatch);
    const { records, oversize } = splitSchd(
      live.map((l) => l.json),
      maxBytes,
    );
    res.records = records.length;
    if (oversize.length) {
      const big = oversize.map((i) => live[i]);
      const dead = await markFailed(
        tx,
        big.map((l) => ({ eventId: l.row.eventId, attemptsBefore: l.row.attempts, next: { state: 'DEAD', attempts: l.row.attempts + 1, nextAttemptAt: null } })),
        `too-large: complete state over msgx.schd.max-record-bytes=${maxBytes}`,
      );
      res.dead += dead.length;
      d.log.error({ topic, flids: big.map((l) => l.row.flid), maxBytes, sizes: big.map((l) => Buffer.byteLength(l.json)) }, 'schd dispatch: state larger than a record, DEAD');
    }

    // one send per record: Kafka's size limit applies to a partition's whole batch
    const sends = records.map((rec) => ({ records: [{ key: SCHD_KEY, value: rec.value }], carries: [rec.members.map((i) => ({ ...live[i].row, stateVersion: live[i].version }))] }));
    const r = await sendRound(tx, d, 'schd', topic, sends, policy);
    res.sent = r.sent;
    res.overtaken = r.overtaken;
    res.failed = r.failed;
    res.dead += r.dead;
    return res;
  });
}

export const schdDrain = (d: DispatchDeps, budgetMs: number, signal?: AbortSignal): Promise<DrainNext> => drain(schdRound, 'schd', d, budgetMs, signal);
