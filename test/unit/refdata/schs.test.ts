import { describe, expect, it } from 'vitest';
import { decodeSchs } from '../../../lib/refdata/schs.ts';
import { decodeEnvelope } from '../../../lib/sis/envelope.ts';

const schs = (inner: string) => decodeEnvelope(`<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201080000</DTTM><TYPE>SCHS</TYPE><STYP>DNLD</STYP></META><SCHS>${inner}</SCHS></MSG>`);
const head = '<SNAM>Winter</SNAM><APCD>CTU</APCD><SDAT>10SEP26</SDAT><EDAT>10jun27</EDAT>';
const fltr = '<FLTR><ALCD>CA</ALCD><FLNO>CA002</FLNO><ROUT RTNO="1"><APCD>CAN</APCD><SCDT>0730</SCDT></ROUT><ERUT RTNO="1"><APCD>CAN</APCD></ERUT><ERUT RTNO="2"><APCD>CTU</APCD></ERUT><RENO/></FLTR>';

describe('decodeSchs: stored as received per season', () => {
  it('season header and FLTR records with repeated ROUT/ERUT', () => {
    const s = decodeSchs(schs(`${head}<RECS>1</RECS>${fltr}`));
    expect(s).toMatchObject({ snam: 'Winter', apcd: 'CTU', sdat: '2026-09-10', edat: '2027-06-10', recs: 1 });
    expect(s.flights[0]).toEqual({
      ALCD: 'CA',
      FLNO: 'CA002',
      ROUT: [{ '@RTNO': '1', APCD: 'CAN', SCDT: '0730' }],
      ERUT: [
        { '@RTNO': '1', APCD: 'CAN' },
        { '@RTNO': '2', APCD: 'CTU' },
      ],
      RENO: null,
    });
  });
  it('PROTOCOL on RECS mismatch, bad dates, missing season name', () => {
    expect(() => decodeSchs(schs(`${head}<RECS>2</RECS>${fltr}`))).toThrow(/RECS=2/);
    expect(() => decodeSchs(schs(`${head.replace('10SEP26', '31SEP26')}<RECS>0</RECS>`))).toThrow(/SDAT/);
    expect(() => decodeSchs(schs(`${head.replace('Winter', '')}<RECS>0</RECS>`))).toThrow(/SNAM/);
  });
});
