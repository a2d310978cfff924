// RSTA resource status (SIS:3.14). Key (RTYP, RSID), the last message for a key wins.
// Default enabled. D applies in [STDT, EDDT): no STDT = from the message's own time (META/DTTM,
// never the time the pump gets to it), no EDDT = until the next event. E clears any window.
// A window already over at the message's time is stored (it answers "enabled", reported as
// expired), not refused: the outcome of a message never depends on when it is processed.
// The answer at time t is computed at query time (no job re-enables anything). A status
// missing from a message deletes nothing.
import { protocol } from '../core/errors.ts';
import type { Envelope } from '../sis/envelope.ts';
import { child, type XmlNode } from '../sis/xml.ts';
import { fromWallClock, parseSisTime } from '../sis/values.ts';
import { checkRecs } from './decode.ts';
import { RSTA_RESOURCE_CATEGORY, RSTA_RESOURCE_TYPES, type ResourceType } from '../sis/refdata-keys.ts';
import type { Executor } from '../db/statement.ts';
import * as Sql from '../sql/refdata.ts';

export interface ResourceStatusUpdate {
  rtyp: ResourceType;
  rsid: string;
  stat: 'E' | 'D';
  /** D: start of the disabled window (STDT, else the message's time; null only when the window
   *  had ended before the message's time, i.e. "disabled until EDDT", already over); E: null */
  stdt: Date | null;
  /** D: exclusive end, null = open-ended; E: null */
  eddt: Date | null;
  remk: string | null;
}

export const isResourceType = (s: string): s is ResourceType => (RSTA_RESOURCE_TYPES as readonly string[]).includes(s);

/** The message's own time: META/DTTM (yyyyMMddHHmmss, local; validated by the envelope). */
export function messageTime(dttm: string, timeZone: string): Date {
  const [y, mo, d, h, mi, s] = (/^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(dttm) ?? []).slice(1).map(Number);
  return fromWallClock(y, mo, d, h, mi, s, timeZone);
}

/** Pure: RSTA records (direct children named RSTA; RECS optional but checked when present). Depends on the message only. */
export function decodeRsta(env: Pick<Envelope, 'root' | 'styp' | 'dttm'>, timeZone: string): ResourceStatusUpdate[] {
  const sent = messageTime(env.dttm, timeZone);
  const nodes = env.root.children.filter((c) => c.tag === 'RSTA');
  checkRecs(env.root, nodes.length, `RSTA/${env.styp}`, { optional: true });
  if (nodes.length === 0) throw protocol(`RSTA/${env.styp}: no RSTA record`);
  const byKey = new Map<string, ResourceStatusUpdate>();
  nodes.forEach((n, i) => {
    const u = decodeOne(n, i + 1, timeZone, sent);
    const k = `${u.rtyp}|${u.rsid}`;
    byKey.delete(k);
    byKey.set(k, u);
  });
  return [...byKey.values()];
}

function decodeOne(n: XmlNode, i: number, tz: string, sent: Date): ResourceStatusUpdate {
  const text = (tag: string) => child(n, tag)?.text ?? '';
  const where = `RSTA record ${i}`;
  const rtyp = text('RTYP').toUpperCase();
  if (!isResourceType(rtyp)) throw protocol(`${where}: RTYP="${text('RTYP')}" is not one of ${RSTA_RESOURCE_TYPES.join('/')}`);
  const rsid = text('RSID');
  if (rsid === '') throw protocol(`${where}: RSID missing or empty`);
  const stat = text('STAT').toUpperCase();
  if (stat !== 'E' && stat !== 'D') throw protocol(`${where}: STAT="${text('STAT')}" is not E or D`);
  const remk = text('REMK') || null;
  if (stat === 'E') return { rtyp, rsid, stat, stdt: null, eddt: null, remk };
  const eddt = text('EDDT') ? parseSisTime(text('EDDT'), tz, 'EDDT') : null;
  if (text('STDT')) {
    const stdt = parseSisTime(text('STDT'), tz, 'STDT');
    if (eddt && eddt.getTime() <= stdt.getTime()) throw protocol(`${where}: EDDT="${text('EDDT')}" is not after STDT="${text('STDT')}"`);
    return { rtyp, rsid, stat, stdt, eddt, remk };
  }
  // No STDT: from the message's time. A window that had already ended then is kept as
  // "disabled until EDDT" (no start): it answers enabled from EDDT on, i.e. now.
  if (eddt && eddt.getTime() <= sent.getTime()) return { rtyp, rsid, stat, stdt: null, eddt, remk };
  return { rtyp, rsid, stat, stdt: sent, eddt, remk };
}

/** Pure: the status a stored row means at time t. */
export function statusOf(row: Pick<ResourceStatusUpdate, 'stat' | 'stdt' | 'eddt'> | undefined, at: Date): 'E' | 'D' {
  if (!row || row.stat === 'E') return 'E';
  const t = at.getTime();
  if (row.stdt && t < row.stdt.getTime()) return 'E';
  if (row.eddt && t >= row.eddt.getTime()) return 'E';
  return 'D';
}

/** Store: upsert per key (last message wins); keys not carried are untouched. */
export async function upsertStatuses(db: Executor, updates: ResourceStatusUpdate[], msgId: number, now: Date): Promise<void> {
  if (updates.length === 0) return;
  await Sql.upsertStatuses(db, JSON.stringify(updates), msgId, now);
}

/** Store: RSTA DEL forgets the keys carried (the resource is back to the default, enabled). */
export async function deleteStatuses(db: Executor, keys: { rtyp: string; rsid: string }[]): Promise<void> {
  if (keys.length === 0) return;
  await Sql.deleteStatuses(db, JSON.stringify(keys));
}

export interface ResourceStatus {
  rtyp: ResourceType;
  rsid: string;
  /** The status at the query time. */
  status: 'E' | 'D';
  /** The stored event (null when the resource is only known from its reference list). */
  stat: 'E' | 'D' | null;
  stdt: Date | null;
  eddt: Date | null;
  remk: string | null;
  lastMsgId: number | null;
  /** A D window whose end is at or before the query time: the resource is enabled again. */
  expired: boolean;
}

/**
 * Every known resource of a type at time `at`: those with a stored status and those listed in
 * the type's reference category (GLST for GATE, …) without one (enabled by default).
 */
export async function statusAt(db: Executor, a: { type: ResourceType; at: Date }): Promise<ResourceStatus[]> {
  const rows = (await Sql.listStatusesOfType(db, a.type, RSTA_RESOURCE_CATEGORY[a.type])) as Omit<ResourceStatus, 'status' | 'expired'>[];
  return rows.map((row) => ({
    ...row,
    status: statusOf(row.stat ? { stat: row.stat, stdt: row.stdt, eddt: row.eddt } : undefined, a.at),
    expired: row.stat === 'D' && row.eddt !== null && row.eddt.getTime() <= a.at.getTime(),
  }));
}
