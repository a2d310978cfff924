// The SIS request messages written to COUTMSGS (docs/reference-data.md "Requests"). Pure.
//   RQRD: TYPE RQRD, STYP = requested TYPE, <RQRD><RTYP>SLST</RTYP></RQRD>
//   RQFD: TYPE RQFD, STYP NONE,  <RQFD><STDB>t</STDB><STDE>t</STDE></RQFD> (operation day bounds, DDMONYYHHMM local)
import { formatDttm, formatSisTime, operationDayBounds } from '../sis/values.ts';
import { REQUESTABLE_TYPES } from '../sis/refdata-keys.ts';

export type RequestSpec = { kind: 'RQRD'; rtype: string } | { kind: 'RQFD'; operationDay: string };

export interface RequestMessageInput {
  spec: RequestSpec;
  sender: string;
  seqn: number;
  now: Date;
  timeZone: string;
  cutover: string;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function buildRequestXml(a: RequestMessageInput): string {
  const { spec } = a;
  const [type, styp, body] =
    spec.kind === 'RQRD'
      ? ['RQRD', spec.rtype, `<RQRD><RTYP>${esc(spec.rtype)}</RTYP></RQRD>`]
      : (() => {
          const { start, end } = operationDayBounds(spec.operationDay, a.timeZone, a.cutover);
          return ['RQFD', 'NONE', `<RQFD><STDB>${formatSisTime(start, a.timeZone)}</STDB><STDE>${formatSisTime(end, a.timeZone)}</STDE></RQFD>`];
        })();
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<MSG xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="unisysaodbsis.xsd">' +
    `<META><SNDR>${esc(a.sender)}</SNDR><SEQN>${a.seqn}</SEQN><DTTM>${formatDttm(a.now, a.timeZone)}</DTTM>` +
    `<TYPE>${type}</TYPE><STYP>${esc(styp)}</STYP></META>` +
    body +
    '</MSG>'
  );
}

/** Validate an operator's request (HTTP body, CLI). Returns the spec or the reason it is refused. */
export function parseRequestSpec(input: unknown): RequestSpec | { error: string } {
  if (typeof input !== 'object' || input === null) return { error: 'body must be a JSON object' };
  const o = input as Record<string, unknown>;
  if (o.type === 'RQRD') {
    const rtype = typeof o.rtype === 'string' ? o.rtype.trim().toUpperCase() : '';
    if (!REQUESTABLE_TYPES.includes(rtype)) return { error: `rtype must be one of ${REQUESTABLE_TYPES.join(', ')}` };
    return { kind: 'RQRD', rtype };
  }
  if (o.type === 'RQFD') {
    const day = typeof o.operationDay === 'string' ? o.operationDay : '';
    if (!isIsoDay(day)) return { error: 'operationDay must be a date YYYY-MM-DD' };
    return { kind: 'RQFD', operationDay: day };
  }
  return { error: 'type must be RQRD or RQFD' };
}

export function isIsoDay(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const t = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
  return t.getUTCFullYear() === +m[1] && t.getUTCMonth() === +m[2] - 1 && t.getUTCDate() === +m[3];
}

/** The operation day after `day` ('YYYY-MM-DD'). */
export function nextDay(day: string): string {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + 1)).toISOString().slice(0, 10);
}
