// THE one table of truth for reference data (docs/reference-data.md "Key table").
// Record element = TYPE; key = first field. `repeated` children are always stored as arrays
// (even with zero or one occurrence); `fields` are the tags seen in the sample corpus —
// anything else is still stored, but reported as an unknown tag. Decoder, store, handlers,
// routes and the request validator all read this table; nothing else lists categories.
// It is part of the SIS format (below the domains) because both lib/refdata and lib/requests read it.

export interface RefCategory {
  /** SIS TYPE = record element name. */
  rtype: string;
  /** Key tag (first field of the record). */
  key: string;
  /** Children that may repeat: always an array in the stored record. */
  repeated: readonly string[];
  /** Tags known from the corpus, in document order (key first). */
  fields: readonly string[];
  /** One of the 13 designed categories (docs/reference-data.md), or a further TYPE seen in the samples. */
  design: boolean;
  /** What it is, for docs and admin-api. */
  title: string;
}

const c = (rtype: string, title: string, design: boolean, fields: string, repeated: readonly string[] = []): RefCategory => {
  const list = fields.split(/\s+/);
  return { rtype, key: list[0], fields: list, repeated, design, title };
};

export const REF_CATEGORIES: readonly RefCategory[] = [
  // The 13 categories of the design.
  c('COUL', 'countries', true, 'COUC COUN CNMC REGC', ['REGC']),
  c('ARPT', 'airports', true, 'ITCD ICCD ANAM ANMC BDIS CTRY ACTY ATYP HAUL ABBR', ['ABBR']),
  c('AIRL', 'airlines', true, 'ITOP ICOP ONAM ONMC CTRY TRML OGRP SUBC DORI', ['TRML', 'OGRP', 'SUBC']),
  c('AIRC', 'aircraft types', true, 'ITAT ICAT DESC CDSC CHAP MAXP MFWT MTWT ALEN WSPN MHTM MABR'),
  c('REGN', 'aircraft registrations', true, 'RNUM ITAT OWID ACAL ALSC MAXP MFWT MTWT'),
  c('ORGN', 'organisations', true, 'OGID ONAM ONMC OCAT', ['OCAT']),
  c('FLTL', 'flight types', true, 'FTYP CTYP FDES FDSC FCML'),
  c('TLST', 'terminals', true, 'TCOD TNAM TNMC TCAT TPAX'),
  c('GLST', 'gates', true, 'GCOD GTNM GNMC GCAT GTML PIER'),
  c('SLST', 'stands', true, 'SCOD STNM SNMC SATC STGP SWID SHGT STML MABS DIGT DDGT REMT FEPU'),
  c('CLST', 'check-in counters', true, 'CCOD CTNM CNMC CCAT CTML CTRA'),
  c('BLST', 'baggage belts', true, 'BCOD BTNM BNMC BCAT BTML'),
  c('CHLT', 'chutes', true, 'CCOD CHNM CNMC CTML CCAT'),
  // Further TYPEs of the samples, stored by the same mechanism for admin-api lookups.
  c('ABDG', 'airbridges', false, 'ABCD DESC CDSC AHGT ATML ATHE STND GATE AMNO', ['STND', 'GATE']),
  c('ABNR', 'abnormal reasons', false, 'ANRC ANRD ARDC'),
  c('CITY', 'cities', false, 'ITCD ICCD CNAM CNMC CTRY ABBR', ['ABBR']),
  c('DLYL', 'delay codes', false, 'DCOD DCDN DDES DDSC'),
  c('HLTR', 'handling types', false, 'HLTC HLTD HTDC HLTT UMNM'),
  c('PLST', 'piers', false, 'PCOD PRNM PNMC PCAT PTML'),
  c('REGL', 'regions', false, 'REGC REGN RGNC'),
  c('STTS', 'statuses', false, 'STTC STTD STDC ABNS'),
  c('VIPL', 'VIP persons', false, 'VPCD VPNC VFNM VLNM VDES VDSC VPON VRNK VPTC VCTN VCMN VRMK VPWU VPPS'),
  c('VIPS', 'VIP services', false, 'VSCD VSDS VSDC VSQC VSUC'),
];

const BY_TYPE = new Map(REF_CATEGORIES.map((x) => [x.rtype, x]));

export function refCategory(rtype: string): RefCategory | undefined {
  return BY_TYPE.get(rtype.toUpperCase());
}

/** STYPs of a reference TYPE and what they do to the stored category. */
export const REF_STYPS = {
  DNLD: 'replace',
  RESP: 'replace',
  ADD: 'upsert',
  UPD: 'upsert',
  DEL: 'delete',
} as const;
export type RefStyp = keyof typeof REF_STYPS;
export type RefOperation = (typeof REF_STYPS)[RefStyp];

// RSTA (resource status, SIS:3.14; format reconstructed from the design, not seen in samples: docs/reference-data.md "Resource status").
export const RSTA_RESOURCE_TYPES = ['BELT', 'CNTR', 'GATE', 'STND'] as const;
export type ResourceType = (typeof RSTA_RESOURCE_TYPES)[number];
/** Which reference category lists the resources of an RSTA resource type (for "every known resource"). */
export const RSTA_RESOURCE_CATEGORY: Record<ResourceType, string> = { BELT: 'BLST', CNTR: 'CLST', GATE: 'GLST', STND: 'SLST' };
export const RSTA_FIELDS = ['RTYP', 'RSID', 'STAT', 'STDT', 'EDDT', 'REMK'] as const;

/** TYPEs an RQRD may ask for: every reference category, plus RSTA and SCHS. */
export const REQUESTABLE_TYPES: readonly string[] = [...REF_CATEGORIES.map((x) => x.rtype), 'RSTA', 'SCHS'];
