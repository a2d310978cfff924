// REF_MASTER persistence: set-based statements, one per operation (lib/sql/refdata.ts). Callers
// own the transaction (DNLD/RESP replace = delete-the-rest + upsert inside the pump's business
// transaction).
import type { Executor } from '../db/statement.ts';
import * as Sql from '../sql/refdata.ts';
import type { RecordFields, RefRecord } from './decode.ts';

export interface RefMasterRow {
  rtype: string;
  rkey: string;
  record: RecordFields;
  lastMsgId: number;
  updatedAt: Date;
}

const asSet = (records: RefRecord[]) => JSON.stringify(records.map((r) => ({ rkey: r.rkey, record: r.fields })));

/** ADD/UPD: insert or overwrite the records carried. */
export async function upsertRecords(db: Executor, rtype: string, records: RefRecord[], msgId: number, now: Date): Promise<number> {
  if (records.length === 0) return 0;
  return Sql.upsertRecords(db, rtype, asSet(records), msgId, now);
}

/** DNLD/RESP: the category becomes exactly the records carried (in the caller's transaction). */
export async function replaceCategory(db: Executor, rtype: string, records: RefRecord[], msgId: number, now: Date): Promise<{ removed: number; written: number }> {
  const removed = await Sql.deleteOtherKeys(
    db,
    rtype,
    records.map((r) => r.rkey),
  );
  const written = await upsertRecords(db, rtype, records, msgId, now);
  return { removed, written };
}

/** DEL: remove the records whose key is carried. */
export async function deleteKeys(db: Executor, rtype: string, keys: string[]): Promise<number> {
  if (keys.length === 0) return 0;
  return Sql.deleteKeys(db, rtype, keys);
}

export async function listCategory(db: Executor, rtype: string): Promise<RefMasterRow[]> {
  return (await Sql.listCategory(db, rtype)) as RefMasterRow[];
}

export async function getRecord(db: Executor, rtype: string, rkey: string): Promise<RefMasterRow | undefined> {
  return (await Sql.getRecord(db, rtype, rkey)) as RefMasterRow | undefined;
}

// --- SCHS (seasonal schedule), stored as received per season ---

export interface SeasonRecord {
  snam: string;
  apcd: string;
  /** 'YYYY-MM-DD' */
  sdat: string;
  edat: string;
  recs: number;
  flights: RecordFields[];
}

/** DNLD/RESP of a season: replaces that season (SNAM, APCD) as a whole. */
export async function replaceSeason(db: Executor, s: SeasonRecord, msgId: number, now: Date): Promise<void> {
  await Sql.replaceSeason(db, s.snam, s.apcd, s.sdat, s.edat, s.recs, JSON.stringify(s.flights), msgId, now);
}
