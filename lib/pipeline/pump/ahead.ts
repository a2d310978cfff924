// The read and decode steps, and the read ahead: the next batch read and decoded while this one's
// business, mirror and terminal steps run (never applied ahead). A large message's batch is
// followed by a full collection when it grew the heap (heapMark).
import v8 from 'node:v8';
import { PUMP } from '../../core/tuning.ts';
import { withTimeout } from '../../core/timeout.ts';
import { collectGarbage } from '../../runtime/gc.ts';
import { describe } from '../../core/errors.ts';
import type { DecodeHints } from '../../domain/handlers.ts';
import { decodeMessage, HINTED_BODY, LARGE_BODY } from '../decoding.ts';
import { readBodies } from '../inbox.ts';
import type { HeadRow } from '../../sql/proc-state.ts';
import type { Body } from './batch.ts';
import type { DecodePort, PumpDeps } from './deps.ts';

/** Decoding on the caller's thread, without a budget (tools and tests that step through the queue). */
export const inlineDecoding: DecodePort = { decode: async (bodies) => bodies.map(() => 'inline' as const) };

/**
 * The batch after the current one, read and decoded while the current one's business
 * transaction runs. Used only for the messages that the next batch's own heads read (authoritative:
 * state, attempts, applied_state, identity) lists at the same positions from the same first
 * msg_id; anything else (a replay that moved the head, a batch cut short) discards it. Decoding is
 * a pure function of the body, which the inbox never changes for a msg_id.
 */
export interface Ahead {
  next: { ids: number[]; results: Promise<Map<number, Body>> } | null;
}

export const isLarge = (b: Body | undefined) => b !== undefined && b !== 'missing' && b.body.length > LARGE_BODY;

/** A large message's batch that grew the heap by more than this is followed by a full collection (collectGarbage). */
const RELEASE_AFTER_GROWTH = PUMP.releaseAfterGrowthBytes;
const heapUsed = () => v8.getHeapStatistics().used_heap_size;

/**
 * The heap as a batch starts. A large message (a big snapshot) that was applied leaves garbage of
 * several times its live data: `release()` collects it now (given back to the system at the next
 * idle minute: lib/runtime/gc.ts) when the heap grew by more than RELEASE_AFTER_GROWTH; one that
 * changed little (its records found unchanged) left little, and V8's own collections take it.
 * True when it collected.
 */
export function heapMark(): { release(): boolean } {
  const atStart = heapUsed();
  return {
    release() {
      if (heapUsed() - atStart <= RELEASE_AFTER_GROWTH) return false;
      collectGarbage();
      return true;
    },
  };
}

/** The read and decode steps for the batch: from the batch read ahead where it still holds, the rest read and decoded now. */
export async function readAndDecode(deps: PumpDeps, heads: HeadRow[], ahead: Ahead | null): Promise<Map<number, Body>> {
  const out = new Map<number, Body>();
  const pre = ahead?.next;
  if (ahead) ahead.next = null;
  if (pre && pre.ids[0] === heads[0].msg_id) {
    const got = await pre.results; // this batch's own read, made earlier: its failure is the inbox read's failure
    for (let i = 0; i < heads.length && heads[i].msg_id === pre.ids[i]; i++) {
      const b = got.get(heads[i].msg_id);
      if (b === undefined || b === 'missing') break; // not decoded ahead, or a row that may have been purged meanwhile: read now
      out.set(heads[i].msg_id, b);
    }
  }
  const last = [...out.values()].at(-1);
  if (last && last !== 'missing' && last.dec.ok && last.dec.ownBatch) return out; // a snapshot: nothing after it is in this batch
  const rest = heads.slice(out.size).map((row) => row.msg_id);
  if (rest.length === 0) return out;
  const bodies = await withTimeout(deps.pump.timeoutMs, 'inbox read', readBodies(deps.inbox, rest));
  for (const [id, b] of await decodeBodies(deps, rest, bodies)) out.set(id, b);
  return out;
}

/** The next batch read ahead, if this one takes every message it read (`whole`) and there are `following` ones: read and decoded while this one commits. */
export function readAheadAfter(deps: PumpDeps, ahead: Ahead | null, o: { whole: boolean; following: HeadRow[] }): void {
  if (ahead && o.whole && o.following.length > 0) readAhead(deps, ahead, o.following);
}

/** Start reading and decoding the batch after this one (a failure is the next batch's inbox read failure, if it is still that batch). */
export function readAhead(deps: PumpDeps, ahead: Ahead, rows: HeadRow[]): void {
  const ids = rows.map((row) => row.msg_id);
  const results = withTimeout(deps.pump.timeoutMs, 'inbox read', readBodies(deps.inbox, ids)).then((bodies) => decodeBodies(deps, ids, bodies));
  results.catch(() => {});
  ahead.next = { ids, results };
}

/** Decode these bodies in order (through deps.decoder), up to and including the first message that is a batch of its own. */
async function decodeBodies(deps: PumpDeps, ids: number[], bodies: Map<number, string>): Promise<Map<number, Body>> {
  const out = new Map<number, Body>();
  const present = ids.flatMap((id) => {
    const body = bodies.get(id);
    return body === undefined ? [] : [body];
  });
  deps.decoder.prepare?.(present); // a large body's worker starts while the hints are read
  const hints = present.some((b) => b.length >= HINTED_BODY) ? await decodeHints(deps) : undefined;
  const results = await deps.decoder.decode(present, hints);
  let k = 0;
  for (const id of ids) {
    const body = bodies.get(id);
    if (body === undefined) {
      out.set(id, 'missing');
      continue;
    }
    const r = results[k++];
    if (r === 'later') break;
    const dec = r === 'inline' ? decodeMessage(deps.registry, { airport: deps.airport, includeDayBoundary: deps.pump.includeDayBoundary }, body, hints) : r;
    out.set(id, { body, dec });
    if (dec.ok && dec.ownBatch) break;
  }
  return out;
}

/**
 * The decode hints of a large body (a snapshot's records whose digest says they need no decoding),
 * read on the terminal connection (the session may be in the business transaction of the batch
 * before). Only a shortcut: when they cannot be read, every record is decoded.
 */
async function decodeHints(deps: PumpDeps): Promise<DecodeHints | undefined> {
  try {
    return await withTimeout(deps.pump.timeoutMs, 'decode hints', deps.registry.decodeHints(deps.terminalDb));
  } catch (err) {
    deps.log.warn({ err: describe(err) }, 'decode hints not read: every record of the large message is decoded');
    return undefined;
  }
}
