// SCHS (seasonal schedule): <SCHS>SNAM APCD SDAT EDAT RECS FLTR*</SCHS>. Decided: stored as
// received per season (SNAM, APCD), each DNLD/RESP replacing its season; the FLTR records are
// kept with the reference-data JSON encoding, values not interpreted (no flight is created).
import { protocol } from '../core/errors.ts';
import type { Envelope } from '../sis/envelope.ts';
import { child } from '../sis/xml.ts';
import { parseSisDate } from '../sis/values.ts';
import { checkRecs, childrenValues } from './decode.ts';
import type { SeasonRecord } from './store.ts';

/** Children of FLTR that repeat (ROUT = route without the home airport, ERUT = entire route). */
export const SCHS_FLTR_REPEATED = ['ROUT', 'ERUT'] as const;

export function decodeSchs(env: Pick<Envelope, 'root' | 'styp'>): SeasonRecord {
  const where = `SCHS/${env.styp}`;
  const schs = child(env.root, 'SCHS');
  if (!schs) throw protocol(`${where}: SCHS element missing`);
  const text = (tag: string) => {
    const v = child(schs, tag)?.text ?? '';
    if (v === '') throw protocol(`${where}: ${tag} missing or empty`);
    return v;
  };
  const snam = text('SNAM');
  const apcd = text('APCD');
  const sdat = parseSisDate(text('SDAT'), 'SDAT');
  const edat = parseSisDate(text('EDAT'), 'EDAT');
  if (edat < sdat) throw protocol(`${where}: EDAT="${text('EDAT')}" is before SDAT="${text('SDAT')}"`);
  const fltr = schs.children.filter((c) => c.tag === 'FLTR');
  const recs = checkRecs(schs, fltr.length, where);
  const repeated = new Set<string>(SCHS_FLTR_REPEATED);
  return { snam, apcd, sdat, edat, recs, flights: fltr.map((f) => childrenValues(f, repeated)) };
}
