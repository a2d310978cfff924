// REF_MASTER persistence: set-based statements, one per operation. Callers own the transaction
// (DNLD/RESP replace = delete-the-rest + upsert inside the pump's business transaction).
import { sql, type Kysely } from 'kysely';
import type { RecordFields, RefRecord } from './decode.ts';

type Q = Kysely<any>;

export interface RefMasterRow {
  rtype: string;
  rkey: string;
  record: RecordFields;
  lastMsgId: number;
  updatedAt: Date;
}

const asSet = (records: RefRecord[]) => JSON.stringify(records.map((r) => ({ rkey: r.rkey, record: r.fields })));

/** ADD/UPD: insert or overwrite the records carried. */
export async function upsertRecords(db: Q, rtype: string, records: RefRecord[], msgId: number, now: Date): Promise<number> {
  if (records.length === 0) return 0;
  const r = await sql`INSERT INTO ref_master (rtype, rkey, record, last_msg_id, updated_at)
    SELECT ${rtype}, x.rkey, x.record, ${msgId}, ${now}
      FROM jsonb_to_recordset(${asSet(records)}::jsonb) AS x(rkey text, record jsonb)
    ON CONFLICT (rtype, rkey) DO UPDATE
      SET record = excluded.record, last_msg_id = excluded.last_msg_id, updated_at = excluded.updated_at`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

/** DNLD/RESP: the category becomes exactly the records carried (in the caller's transaction). */
export async function replaceCategory(db: Q, rtype: string, records: RefRecord[], msgId: number, now: Date): Promise<{ removed: number; written: number }> {
  const keys = records.map((r) => r.rkey);
  const del = await sql`DELETE FROM ref_master WHERE rtype = ${rtype} AND NOT (rkey = ANY(${keys}::text[]))`.execute(db);
  const written = await upsertRecords(db, rtype, records, msgId, now);
  return { removed: Number(del.numAffectedRows ?? 0), written };
}

/** DEL: remove the records whose key is carried. */
export async function deleteKeys(db: Q, rtype: string, keys: string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const r = await sql`DELETE FROM ref_master WHERE rtype = ${rtype} AND rkey = ANY(${keys}::text[])`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

export async function listCategory(db: Q, rtype: string): Promise<RefMasterRow[]> {
  const r = await sql<RefMasterRow>`SELECT rtype, rkey, record, last_msg_id AS "lastMsgId", updated_at AS "updatedAt"
    FROM ref_master WHERE rtype = ${rtype} ORDER BY rkey`.execute(db);
  return r.rows;
}

export async function getRecord(db: Q, rtype: string, rkey: string): Promise<RefMasterRow | undefined> {
  const r = await sql<RefMasterRow>`SELECT rtype, rkey, record, last_msg_id AS "lastMsgId", updated_at AS "updatedAt"
    FROM ref_master WHERE rtype = ${rtype} AND rkey = ${rkey}`.execute(db);
  return r.rows[0];
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
export async function replaceSeason(db: Q, s: SeasonRecord, msgId: number, now: Date): Promise<void> {
  await sql`INSERT INTO schs_season (snam, apcd, sdat, edat, recs, flights, last_msg_id, updated_at)
    VALUES (${s.snam}, ${s.apcd}, ${s.sdat}::date, ${s.edat}::date, ${s.recs}, ${JSON.stringify(s.flights)}::jsonb, ${msgId}, ${now})
    ON CONFLICT (snam, apcd) DO UPDATE SET sdat = excluded.sdat, edat = excluded.edat, recs = excluded.recs,
      flights = excluded.flights, last_msg_id = excluded.last_msg_id, updated_at = excluded.updated_at`.execute(db);
}
