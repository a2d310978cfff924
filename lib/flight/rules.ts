// THE rule table of the flight domain (docs/flight-state.md). Everything about a SIS flight tag is
// declared here once: how it is decoded (kind, format, domain), which state key(s) it feeds,
// what an empty tag means, which column/table stores it, collection keys and capacities, and
// which FLOP STYP carries which tags. decode.ts, merge.ts, store.ts, read.ts and state.ts are
// driven by these tables; none of them knows a tag by name except through this file.

/** Value formats of scalar keys and collection fields. */
export type ValueKind =
  | 'text' // trimmed text
  | 'int' // decimal integer (PROTOCOL otherwise)
  | 'time' // DDMONYYHHMM local → ISO-8601 with offset
  | 'hhmm' // HHMM duration, kept as the 4-digit text
  | 'flid' // integer flight id, kept as canonical decimal text (leading zeros dropped)
  | 'bool'; // status keys only (never read from a tag)

/** Main-row keys: a key of the complete state stored in a FLIGHT_SCHD column. */
export interface ScalarKey {
  key: string;
  kind: ValueKind;
  /** Column in flight_schd (lower-case snake case). */
  column: string;
  /** Domain of an enumerated value (PROTOCOL outside it). */
  values?: readonly string[];
  /** Smallest value of an 'int' key (PROTOCOL below it). */
  min?: number;
}

const scalar = (key: string, kind: ValueKind = 'text', values?: readonly string[], min?: number): ScalarKey => ({
  key,
  kind,
  column: key.toLowerCase(),
  ...(values ? { values } : {}),
  ...(min !== undefined ? { min } : {}),
});

/** Every main-row key of the complete state, in JSON key order. */
export const SCALAR_KEYS: readonly ScalarKey[] = [
  // identity & plan
  ...['ALCD', 'ALSC', 'FLNO', 'MVIN'].map((k) => scalar(k)),
  scalar('SODT', 'time'),
  ...['FLTY', 'FLIN', 'ACFT', 'RENO'].map((k) => scalar(k)),
  // turnaround & code-share
  scalar('TAOP'),
  scalar('TAFL'),
  scalar('TAID', 'flid'),
  scalar('TRML'),
  scalar('CSOP'),
  scalar('CSFT'),
  scalar('MAID', 'flid'),
  // times (SIS and A-CDM)
  ...['ESTT', 'ACTT', 'BOTM', 'LACL', 'FINT', 'APPT', 'EGSR', 'EGST', 'PADT', 'NAAT', 'NEAT', 'PEDT', 'COBT', 'CTOT', 'EOBT', 'TOBT', 'IEST', 'CNCL'].map((k) => scalar(k, 'time')),
  scalar('FTSS'),
  scalar('RUNW'),
  // resources & status
  ...['STND', 'PHAG', 'FHAG', 'MHAG', 'REMC'].map((k) => scalar(k)),
  scalar('MAXP', 'int', undefined, 0), // a passenger capacity: never negative
  ...['VIPP', 'VIPR', 'LBNO', 'LBWT', 'PAXC', 'EXSC', 'EXSR'].map((k) => scalar(k)),
  // composite elements (FDIV / FRET / FLAB / PORT)
  scalar('DDES'),
  scalar('DDIR', 'text', ['TO', 'FROM']),
  scalar('FDIV'),
  scalar('REID', 'text', ['A', 'G']),
  scalar('FRET'),
  scalar('ARES', 'text', ['O', 'G']),
  scalar('FLAB'),
  scalar('PORT_OPEN', 'time'),
  scalar('PORT_CLOSE', 'time'),
];

/** Status keys: always present in the complete state, false when not set. */
export const STATUS_KEYS = ['CANCELLED', 'BOARDING', 'LAST_CALL'] as const;
export type StatusKey = (typeof STATUS_KEYS)[number];

export const SCALAR_BY_KEY: ReadonlyMap<string, ScalarKey> = new Map(SCALAR_KEYS.map((s) => [s.key, s]));

// ---------------------------------------------------------------------------------------------
// Collections

export interface CollectionField {
  /** JSON key inside a row = column name upper-cased. */
  name: string;
  kind: ValueKind;
  /** Where the value sits in the element: a child element (default), an attribute, or the element's own text. */
  from?: 'child' | 'attr' | 'text';
  /** Column (default: name lower-cased). */
  column?: string;
}

export interface CollectionSpec {
  /** Element tag = state key. */
  tag: string;
  /** Detail table. */
  table: string;
  /** Discriminator column + value when several collections share a table (routes, raw fragments). */
  discriminator?: { column: string; value: string };
  /** Number attribute (GTNO, CKNO…): stored as SOURCE_SEQ, `"0"` alone = empty collection. */
  keyAttr?: string;
  fields: readonly CollectionField[];
  /** SIS capacity (or a documented one): more elements → PROTOCOL. Every collection has one. */
  capacity: number;
  /** Kept locally (routes: the first 4); the dropped ones are counted. */
  keepLocal?: number;
  /** SRVT / VIPF: each element kept as a canonical raw XML string. */
  raw?: boolean;
}

const f = (name: string, kind: ValueKind = 'text', from: CollectionField['from'] = 'child'): CollectionField => ({ name, kind, from });
const route = (tag: string, capacity: number): CollectionSpec => ({
  tag,
  table: 'flight_route_point',
  discriminator: { column: 'route_kind', value: tag },
  keyAttr: 'RTNO',
  fields: [f('APCD'), f('SCAT', 'time'), f('SCDT', 'time')],
  capacity,
  keepLocal: 4,
});
const raw = (tag: string, capacity: number): CollectionSpec => ({
  tag,
  table: 'flight_raw_fragment',
  discriminator: { column: 'fragment_kind', value: tag },
  fields: [],
  capacity,
  raw: true,
});

/**
 * Capacity of the collections SIS gives no number for (DELY, SRVT, VIPF): SIS numbers its
 * numbered collections up to 99, so 99 here too (docs/decisions.md). Every collection has a
 * capacity: the detail tables' ORDINAL is a smallint, and PROTOCOL names the tag and count.
 */
export const UNNUMBERED_CAPACITY = 99;

export const COLLECTIONS: readonly CollectionSpec[] = [
  { tag: 'GTDT', table: 'flight_gate', keyAttr: 'GTNO', capacity: 99, fields: [f('GATE'), f('PGOT', 'time'), f('PGCT', 'time'), f('GOTM', 'time'), f('GCTM', 'time'), f('GTYP')] },
  { tag: 'CKDT', table: 'flight_checkin', keyAttr: 'CKNO', capacity: 99, fields: [f('CHKC'), f('CCLS'), f('PCOT', 'time'), f('PCCT', 'time'), f('COTM', 'time'), f('CCTM', 'time'), f('CTYP')] },
  { tag: 'CLDT', table: 'flight_carousel', keyAttr: 'CLNO', capacity: 99, fields: [f('BELT'), f('BCLS'), f('PCOT', 'time'), f('PCCT', 'time'), f('FBAG', 'time'), f('LBAG', 'time'), f('BTYP')] },
  { tag: 'CHDT', table: 'flight_chute', keyAttr: 'CHNO', capacity: 99, fields: [f('CHUT'), f('CCLS'), f('PCBT', 'time'), f('PCET', 'time'), f('CBTM', 'time'), f('CETM', 'time'), f('CTYP')] },
  { tag: 'PSDT', table: 'flight_planned_stand', keyAttr: 'PSNO', capacity: 9, fields: [f('PSST'), f('STST', 'time'), f('STET', 'time')] },
  { tag: 'CHOT', table: 'flight_chock', keyAttr: 'CSNO', capacity: 99, fields: [f('CHTM', 'time'), f('CHID'), f('CHST')] },
  { tag: 'DELY', table: 'flight_delay', capacity: UNNUMBERED_CAPACITY, fields: [f('CODE', 'text', 'attr'), f('STRT', 'time', 'attr'), f('DURA', 'hhmm', 'attr'), f('TEXT', 'text', 'text')] },
  { tag: 'ABTM', table: 'flight_airbridge', keyAttr: 'ASNO', capacity: 99, fields: [f('ABDG'), f('ABOP'), f('AOTM', 'time')] },
  { tag: 'PSHT', table: 'flight_pushback', keyAttr: 'PSHN', capacity: 99, fields: [f('PSTM', 'time'), f('PSID'), f('PUST')] },
  { tag: 'TIPT', table: 'flight_tractor', capacity: 99, fields: [f('TRTM', 'time'), f('TRST')] },
  route('ROUT', 6),
  route('ERUT', 7),
  raw('SRVT', UNNUMBERED_CAPACITY),
  raw('VIPF', UNNUMBERED_CAPACITY),
];

export const COLLECTION_BY_TAG: ReadonlyMap<string, CollectionSpec> = new Map(COLLECTIONS.map((c) => [c.tag, c]));

/** Detail tables (each loaded with one query by FLID set). */
export const DETAIL_TABLES: readonly string[] = [...new Set(COLLECTIONS.map((c) => c.table))];

export const columnOf = (field: CollectionField) => field.column ?? field.name.toLowerCase();

// ---------------------------------------------------------------------------------------------
// Tag rules: what a tag inside a FLOP body or an FLTR record does to the state.

export type TagRule =
  /** One tag → one scalar key; empty = clear. `mandatory`: empty = PROTOCOL (ACFT, FLTY, FLIN). */
  | { rule: 'scalar'; tag: string; key: string; mandatory?: boolean }
  /** A time that also drives a status key: non-empty sets both; empty clears the time and resets the
   *  status, or (CNCL) resets the status and keeps the time. */
  | { rule: 'flagged-time'; tag: string; key: string; status: StatusKey; emptyKeepsTime: boolean }
  /** Tags that link or unlink together (TAOP TAFL TAID): any one empty clears all of them. */
  | { rule: 'linked'; tag: string; group: readonly string[] }
  /** An element whose attributes and text are keys of their own (FDIV, FRET, FLAB). The
   *  `presence` attribute decides whether the element sets anything; when it is empty or absent
   *  the keys are cleared, and text without it is 'clear' (FDIV) or 'protocol' (FRET, FLAB). */
  | { rule: 'attributed'; tag: string; presence: string; attrs: readonly string[]; textKey: string; orphanText: 'clear' | 'protocol' }
  /** PORT: POID O|C selects PORT_OPEN / PORT_CLOSE, POTM gives the time (empty = clear). */
  | { rule: 'port'; tag: string; keys: { O: string; C: string } }
  /** A repeated element → a collection, replaced whole. */
  | { rule: 'collection'; tag: string }
  /** Ignored on purpose (FLID is the address, FFID is informational). */
  | { rule: 'ignore'; tag: string };

const TAG_RULE_LIST: TagRule[] = [
  { rule: 'ignore', tag: 'FLID' },
  { rule: 'ignore', tag: 'FFID' },
  { rule: 'ignore', tag: 'FDEL' }, // the FDEL STYP is the delete signal; its element is always empty
  ...SCALAR_KEYS.filter((s) => !['TAOP', 'TAFL', 'TAID', 'BOTM', 'LACL', 'CNCL', 'DDES', 'DDIR', 'FDIV', 'REID', 'FRET', 'ARES', 'FLAB', 'PORT_OPEN', 'PORT_CLOSE'].includes(s.key)).map(
    (s): TagRule => ({ rule: 'scalar', tag: s.key, key: s.key, ...(['ACFT', 'FLTY', 'FLIN'].includes(s.key) ? { mandatory: true } : {}) }),
  ),
  ...['TAOP', 'TAFL', 'TAID'].map((t): TagRule => ({ rule: 'linked', tag: t, group: ['TAOP', 'TAFL', 'TAID'] })),
  { rule: 'flagged-time', tag: 'BOTM', key: 'BOTM', status: 'BOARDING', emptyKeepsTime: false },
  { rule: 'flagged-time', tag: 'LACL', key: 'LACL', status: 'LAST_CALL', emptyKeepsTime: false },
  { rule: 'flagged-time', tag: 'CNCL', key: 'CNCL', status: 'CANCELLED', emptyKeepsTime: true },
  { rule: 'attributed', tag: 'FDIV', presence: 'DDES', attrs: ['DDES', 'DDIR'], textKey: 'FDIV', orphanText: 'clear' },
  { rule: 'attributed', tag: 'FRET', presence: 'REID', attrs: ['REID'], textKey: 'FRET', orphanText: 'protocol' },
  { rule: 'attributed', tag: 'FLAB', presence: 'ARES', attrs: ['ARES'], textKey: 'FLAB', orphanText: 'protocol' },
  { rule: 'port', tag: 'PORT', keys: { O: 'PORT_OPEN', C: 'PORT_CLOSE' } },
  ...COLLECTIONS.map((c): TagRule => ({ rule: 'collection', tag: c.tag })),
];

/** Tag rules keyed by tag: FLOP bodies and FLTR records share the SIS flight tags. */
export const TAG_RULES: ReadonlyMap<string, TagRule> = new Map(TAG_RULE_LIST.map((r) => [r.tag, r]));

/** The state keys a tag rule writes (what "clear" empties). */
export function keysOf(rule: TagRule): string[] {
  switch (rule.rule) {
    case 'scalar':
      return [rule.key];
    case 'flagged-time':
      return [rule.key, rule.status];
    case 'linked':
      return [...rule.group];
    case 'attributed':
      return [...rule.attrs, rule.textKey];
    case 'port':
      return [rule.keys.O, rule.keys.C];
    case 'collection':
      return [rule.tag];
    case 'ignore':
      return [];
  }
}

// ---------------------------------------------------------------------------------------------
// FLOP STYPs (docs/flight-state.md "Merge rules as implemented"): which tags each carries and what absence means.

export interface FlopStyp {
  /** Tags this STYP carries; other tags in its body are ignored and counted. */
  tags: readonly string[];
  /**
   * 'all': every tag is required (absent → PROTOCOL naming it);
   * 'any': each tag independent (empty = clear, absent = keep), at least one present;
   * 'absent-clears': an absent tag clears what it feeds (the legacy/A-CDM scalars, FRET, FLAB);
   * 'delete': the delete path (FDEL).
   */
  need: 'all' | 'any' | 'absent-clears' | 'delete';
}

const styps: Record<string, FlopStyp> = {};
const def = (need: FlopStyp['need'], ...names: string[]) => {
  for (const n of names) styps[n] = { tags: [n], need };
};
def('all', 'ACFT', 'ACTT', 'ESTT', 'BOTM', 'LACL', 'CNCL', 'FINT', 'MAXP', 'TRML', 'RENO', 'FLTY', 'FLIN', 'FDIV', 'PORT');
def('all', ...COLLECTIONS.map((c) => c.tag));
def('absent-clears', 'FRET', 'FLAB', 'APPT', 'COBT', 'CTOT', 'EGSR', 'EGST', 'EOBT', 'FTSS', 'IEST', 'NAAT', 'NEAT', 'PADT', 'PEDT', 'REMC', 'RUNW', 'STND', 'TOBT');
styps.HNAG = { tags: ['FHAG', 'PHAG', 'MHAG'], need: 'any' };
styps.TAOP = { tags: ['TAOP', 'TAFL', 'TAID'], need: 'any' };
styps.VIPP = { tags: ['VIPP', 'VIPR'], need: 'any' };
styps.EXSS = { tags: ['EXSC', 'EXSR'], need: 'any' };
styps.FDEL = { tags: ['FDEL'], need: 'delete' };

export const FLOP_STYPS: Readonly<Record<string, FlopStyp>> = styps;

/** SCHD STYPs handled by the flight domain. */
export const SCHD_SNAPSHOT_STYPS = ['DNLD', 'RESP'] as const;
export const SCHD_ADFT = 'ADFT';

/** RECS bounds of a snapshot (INV-4). */
export const MAX_RECS = 9999;
