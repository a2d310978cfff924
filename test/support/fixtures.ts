// Hand-written SIS fixtures generated in bulk (big snapshots, many flights).
import { sisMessage } from './services.ts';

/** One FLTR record of a departure on 2026-12-01 (Asia/Shanghai) with realistic collections. */
export function fltr(flid: number, o: { stand?: string; gate?: string } = {}): string {
  const hh = String(6 + (flid % 16)).padStart(2, '0');
  const mm = String(flid % 60).padStart(2, '0');
  return `<FLTR><FLID>${flid}</FLID><ALCD>CA</ALCD><FLNO>CA${1000 + (flid % 9000)}</FLNO><MVIN>D</MVIN><SODT>01DEC26${hh}${mm}</SODT><FLTY>W</FLTY><FLIN>D</FLIN>
<ROUT RTNO="1"><APCD>PEK</APCD><SCAT>01DEC26${hh}${mm}</SCAT></ROUT><ACFT>333</ACFT><RENO>B${1000 + (flid % 9000)}</RENO><TRML>T2</TRML><MAXP>300</MAXP><STND>${o.stand ?? '50' + (flid % 10)}</STND>
<GTDT GTNO="1"><GATE>${o.gate ?? 'G' + (flid % 40)}</GATE><PGOT>01DEC26${hh}00</PGOT><PGCT>01DEC26${hh}30</PGCT><GTYP>D</GTYP></GTDT>
<CKDT CKNO="1"><CHKC>C${flid % 90}</CHKC><CCLS>Y</CCLS><PCOT>01DEC26${hh}00</PCOT><PCCT>01DEC26${hh}30</PCCT><CTYP>D</CTYP></CKDT>
<PSDT PSNO="1"><PSST>50${flid % 10}</PSST><STST>01DEC26${hh}00</STST><STET>01DEC26${hh}50</STET></PSDT><PHAG>110009</PHAG></FLTR>`;
}

/** A SCHD DNLD snapshot of `count` flights (FLIDs from `first`) for operation day 2026-12-01. */
export function bigSnapshot(count: number, first = 1, o: { seqn?: number } = {}): string {
  const recs: string[] = [];
  for (let i = 0; i < count; i++) recs.push(fltr(first + i));
  return sisMessage({ type: 'SCHD', styp: 'DNLD', seqn: o.seqn, body: `<SCHD><RECS>${count}</RECS>${recs.join('\n')}</SCHD>` });
}
