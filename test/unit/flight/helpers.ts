// Hand-written SIS fixtures for the flight-domain tests (never copied from the corpus).
import fs from 'node:fs';
import path from 'node:path';
import { decodeEnvelope, type Envelope } from '../../../lib/sis/envelope.ts';
import type { MergeContext } from '../../../lib/flight/merge.ts';
import { emptyData, type FlightState } from '../../../lib/flight/state.ts';

export const TZ = 'Asia/Shanghai';
export const CTX: MergeContext = { msgId: 100, now: new Date('2026-12-01T00:00:00Z'), timeZone: TZ, cutover: '00:00' };

let seqn = 1;
export function sisXml(type: string, styp: string, body: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>
<MSG><META><SNDR>AODB</SNDR><SEQN>${seqn++}</SEQN><DTTM>20261201080000</DTTM><TYPE>${type}</TYPE><STYP>${styp}</STYP></META>${body}</MSG>`;
}

export const flopEnv = (styp: string, inner: string, flid = '15'): Envelope => decodeEnvelope(sisXml('FLOP', styp, `<FLOP><FLID>${flid}</FLID><FFID>XX-XX1-A-01DEC260800-D</FFID>${inner}</FLOP>`));

/** An FLTR record. */
export const fltr = (flid: string, inner: string) => `<FLTR><FLID>${flid}</FLID>${inner}</FLTR>`;
export const schdEnv = (styp: string, records: string[], recs = records.length): Envelope => decodeEnvelope(sisXml('SCHD', styp, `<SCHD><RECS>${recs}</RECS>${records.join('')}</SCHD>`));

/** A live flight with a few fields. */
export function baseState(flid = '15', data: FlightState['data'] = {}): FlightState {
  return {
    FLID: flid,
    STATE: 'ACTIVE',
    STATE_VERSION: 3,
    OPERATION_DAY: '2026-12-01',
    UPDATED_AT: '2026-12-01T07:00:00+08:00',
    LAST_MSG_ID: 1,
    data: { ...emptyData(), FLNO: 'XX101', ACFT: '320', ...data },
    MAFL: [],
  };
}

/** Local time in TZ as ISO with offset, from 'YYYY-MM-DD HH:MM'. */
export const t = (s: string) => `${s.replace(' ', 'T')}:00+08:00`;

// ----- corpus (third-party data: read in place, never copied) -----------------------------------

export const CORPUS_DIR = path.resolve(import.meta.dirname, '../../../../shared/corpus/unisys-sis');
export const corpusPresent = fs.existsSync(CORPUS_DIR);

export interface CorpusMessage {
  file: string;
  label: string;
  xml: string;
}

/** Every message of the corpus files: `-- LABEL` then INSERT … VALUES ('<xml>', …). */
export function corpusMessages(): CorpusMessage[] {
  if (!corpusPresent) return [];
  const out: CorpusMessage[] = [];
  for (const file of fs
    .readdirSync(CORPUS_DIR)
    .filter((f) => f.startsWith('INSERT_CMINMSGS_'))
    .sort()) {
    const text = fs.readFileSync(path.join(CORPUS_DIR, file), 'utf8');
    const re = /--\s*([^\n]*)\n\s*INSERT INTO[^(]*\([^)]*\)\s*VALUES\s*\('((?:[^']|'')*)'/g;
    for (let m = re.exec(text); m; m = re.exec(text)) out.push({ file, label: m[1].trim(), xml: m[2].replace(/''/g, "'") });
  }
  return out;
}
