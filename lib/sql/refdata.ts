// SQL of the reference data: REF_MASTER (the 23 reference categories), RES_STATUS (RSTA
// resource status) and SCHS_SEASON (seasonal schedules). Statement conventions: lib/db/statement.ts.
import { type Executor, pgOne, pgRows, pgRun, pgStatement } from '../db/statement.ts';

/** A stored reference record (`record`: every field of the record, JSON as received). */
export interface RefMasterRow {
  rtype: string;
  rkey: string;
  record: Record<string, unknown>;
  lastMsgId: number;
  updatedAt: Date;
}

const upsertRecordsStatement = pgStatement<[rtype: string, records: string, msgId: number, now: Date]>(
  'refdata.upsert_records',
  `insert into ref_master (rtype, rkey, record, last_msg_id, updated_at)
   select $1::text, x.rkey, x.record, $3::bigint, $4::timestamptz
     from jsonb_to_recordset($2::jsonb) as x(rkey text, record jsonb)
   on conflict (rtype, rkey) do update
     set record = excluded.record, last_msg_id = excluded.last_msg_id, updated_at = excluded.updated_at`,
);
/**
 * ADD/UPD (and the upsert half of DNLD/RESP): inserts or overwrites the records of $2, a JSON
 * array of {rkey, record}, in category $1.
 */
export function upsertRecords(db: Executor, rtype: string, records: string, msgId: number, now: Date): Promise<number> {
  return pgRun(db, upsertRecordsStatement, rtype, records, msgId, now);
}

const deleteOtherKeysStatement = pgStatement<[rtype: string, keep: string[]]>('refdata.delete_other_keys', `delete from ref_master where rtype = $1::text and not (rkey = any($2::text[]))`);
/** DNLD/RESP: deletes the records of category $1 whose key is not in $2 (the rest is upserted). */
export function deleteOtherKeys(db: Executor, rtype: string, keep: string[]): Promise<number> {
  return pgRun(db, deleteOtherKeysStatement, rtype, keep);
}

const deleteKeysStatement = pgStatement<[rtype: string, keys: string[]]>('refdata.delete_keys', `delete from ref_master where rtype = $1::text and rkey = any($2::text[])`);
/** DEL: deletes the records of category $1 whose key is in $2. */
export function deleteKeys(db: Executor, rtype: string, keys: string[]): Promise<number> {
  return pgRun(db, deleteKeysStatement, rtype, keys);
}

const listCategoryStatement = pgStatement<[rtype: string], RefMasterRow>(
  'refdata.list_category',
  `select rtype, rkey, record, last_msg_id as "lastMsgId", updated_at as "updatedAt"
     from ref_master where rtype = $1::text order by rkey`,
);
/** Every record of category $1, by key. */
export function listCategory(db: Executor, rtype: string): Promise<RefMasterRow[]> {
  return pgRows(db, listCategoryStatement, rtype);
}

const getRecordStatement = pgStatement<[rtype: string, rkey: string], RefMasterRow>(
  'refdata.get_record',
  `select rtype, rkey, record, last_msg_id as "lastMsgId", updated_at as "updatedAt"
     from ref_master where rtype = $1::text and rkey = $2::text`,
);
/** One record of category $1 by its key $2. */
export function getRecord(db: Executor, rtype: string, rkey: string): Promise<RefMasterRow | undefined> {
  return pgOne(db, getRecordStatement, rtype, rkey);
}

const replaceSeasonStatement = pgStatement<[snam: string, apcd: string, sdat: string, edat: string, recs: number, flights: string, msgId: number, now: Date]>(
  'refdata.replace_season',
  `insert into schs_season (snam, apcd, sdat, edat, recs, flights, last_msg_id, updated_at)
   values ($1::text, $2::text, $3::date, $4::date, $5::int, $6::jsonb, $7::bigint, $8::timestamptz)
   on conflict (snam, apcd) do update set sdat = excluded.sdat, edat = excluded.edat, recs = excluded.recs,
     flights = excluded.flights, last_msg_id = excluded.last_msg_id, updated_at = excluded.updated_at`,
);
/** SCHS DNLD/RESP: replaces the season (SNAM, APCD) as a whole (`flights`: JSON array of FLTR records). */
export function replaceSeason(db: Executor, snam: string, apcd: string, sdat: string, edat: string, recs: number, flights: string, msgId: number, now: Date): Promise<number> {
  return pgRun(db, replaceSeasonStatement, snam, apcd, sdat, edat, recs, flights, msgId, now);
}

const upsertStatusesStatement = pgStatement<[updates: string, msgId: number, now: Date]>(
  'refdata.upsert_statuses',
  `insert into res_status (rtyp, rsid, stat, stdt, eddt, remk, last_msg_id, updated_at)
   select x.rtyp, x.rsid, x.stat, x.stdt, x.eddt, x.remk, $2::bigint, $3::timestamptz
     from jsonb_to_recordset($1::jsonb) as x(rtyp text, rsid text, stat text, stdt timestamptz, eddt timestamptz, remk text)
   on conflict (rtyp, rsid) do update set stat = excluded.stat, stdt = excluded.stdt, eddt = excluded.eddt,
     remk = excluded.remk, last_msg_id = excluded.last_msg_id, updated_at = excluded.updated_at`,
);
/**
 * RSTA store: upserts per key (RTYP, RSID), the last message wins; keys not carried are
 * untouched. $1: JSON array of {rtyp, rsid, stat, stdt, eddt, remk}.
 */
export function upsertStatuses(db: Executor, updates: string, msgId: number, now: Date): Promise<number> {
  return pgRun(db, upsertStatusesStatement, updates, msgId, now);
}

const deleteStatusesStatement = pgStatement<[keys: string]>(
  'refdata.delete_statuses',
  `delete from res_status s using jsonb_to_recordset($1::jsonb) as x(rtyp text, rsid text)
    where s.rtyp = x.rtyp and s.rsid = x.rsid`,
);
/** RSTA DEL: forgets the keys of $1, a JSON array of {rtyp, rsid} (the resource is back to the default, enabled). */
export function deleteStatuses(db: Executor, keys: string): Promise<number> {
  return pgRun(db, deleteStatusesStatement, keys);
}

/** A resource of a type with its stored status, if any (all status columns null when it has none). */
export interface ResourceStatusRow {
  rtyp: string;
  rsid: string;
  stat: 'E' | 'D' | null;
  stdt: Date | null;
  eddt: Date | null;
  remk: string | null;
  lastMsgId: number | null;
}

const statusesOfTypeStatement = pgStatement<[rtyp: string, listCategory: string], ResourceStatusRow>(
  'refdata.statuses_of_type',
  `select $1::text as rtyp, coalesce(s.rsid, m.rkey) as rsid, s.stat, s.stdt, s.eddt, s.remk, s.last_msg_id as "lastMsgId"
     from (select * from res_status where rtyp = $1::text) s
     full join (select rkey from ref_master where rtype = $2::text) m on m.rkey = s.rsid
    order by 2`,
);
/**
 * Every known resource of type $1: those with a stored status and those listed in the
 * reference category $2 that lists the type's resources (GLST for GATE, …) without one.
 */
export function listStatusesOfType(db: Executor, rtyp: string, listCategory: string): Promise<ResourceStatusRow[]> {
  return pgRows(db, statusesOfTypeStatement, rtyp, listCategory);
}
