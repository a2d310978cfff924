// The msg dispatch measurement shared by the B3 bench (scripts/bench/dispatch.ts) and the CI
// smoke (scripts/bench/smoke.ts): an outbox of PENDING msg events written with the store's own
// writer, drained by the real msgRound until nothing is due; and the raw send rate of the same
// events, the yardstick.
import { sql } from 'kysely';
import { msgRound, type DispatchDeps } from '../../lib/dispatch/msg.ts';
import type { KafkaEdge } from '../../lib/dispatch/kafka.ts';
import { insertMsgEvents, type MsgEvent } from '../../lib/flight/store.ts';
import type { Bench } from './setup.ts';

/** `events` msg events over `flids` FLIDs (the domain's UPSERT payload), versions rising per FLID. */
export function msgEvents(events: number, flids: number, now: Date): MsgEvent[] {
  const out: MsgEvent[] = [];
  for (let i = 0; i < events; i++) {
    const flid = String(1 + (i % flids));
    const ver = 1 + Math.floor(i / flids);
    out.push({
      flid,
      stateVersion: ver,
      payload: { FLID: flid, STATE_VERSION: ver, UPDATED_AT: now.toISOString(), OP: 'UPSERT', MSG_ID: 1_000_000 + i, TYPE: 'FLOP', STYP: 'ESTT', CHANGED: ['ESTT'] },
    });
  }
  return out;
}

/** An empty outbox, then these events PENDING (10,000 per transaction), analysed. */
export async function fillMsgOutbox(b: Bench, events: readonly MsgEvent[], now: Date): Promise<void> {
  await sql`truncate msg_event`.execute(b.db);
  for (let i = 0; i < events.length; i += 10_000) await b.db.transaction().execute((tx) => insertMsgEvents(tx, events.slice(i, i + 10_000), now));
  await sql`analyze msg_event`.execute(b.db);
}

/** msg rounds until nothing is due; throws unless every event went out. */
export async function drainMsg(b: Bench, d: DispatchDeps, expected: number): Promise<{ sent: number; rounds: number; sec: number }> {
  let sent = 0;
  let rounds = 0;
  const t = performance.now();
  for (;;) {
    const r = await msgRound(d);
    if (r.failed) throw new Error(`msg round failed: ${JSON.stringify(r)}`);
    if (r.picked === 0) break;
    sent += r.sent;
    rounds++;
  }
  const sec = (performance.now() - t) / 1000;
  const left = await sql<{ n: number }>`select count(*)::int n from msg_event where target = 'msg' and state <> 'SENT'`.execute(b.db);
  if (sent !== expected || left.rows[0].n !== 0) throw new Error(`msg: sent ${sent} of ${expected}, ${left.rows[0].n} not SENT`);
  return { sent, rounds, sec };
}

/**
 * B3's yardstick: the same events (key FLID, value the payload with its EVENT_ID) sent by the
 * same producer (the dispatcher's KafkaEdge, acks = all) in sends of `batch` records one after
 * another, with no Postgres: what the broker and the client take on this machine. Events/s.
 */
export async function rawSendRate(kafka: KafkaEdge, topic: string, events: readonly MsgEvent[], batch: number): Promise<number> {
  const records = events.map((e, i) => ({ key: e.flid, value: JSON.stringify({ ...e.payload, EVENT_ID: i + 1 }) }));
  const t = performance.now();
  for (let i = 0; i < records.length; i += batch) await kafka.send(topic, records.slice(i, i + batch));
  return records.length / ((performance.now() - t) / 1000);
}
