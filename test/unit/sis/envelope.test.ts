import { describe, expect, it } from 'vitest';
import { decodeEnvelope, identityKey } from '../../../lib/sis/envelope.ts';
import { PipelineError } from '../../../lib/core/errors.ts';
import { serialize, parseXml } from '../../../lib/sis/xml.ts';

const msg = (meta: string, body = '<FLOP><FLID>1</FLID></FLOP>', tail = '') =>
  `<?xml version="1.0" encoding="UTF-8"?>\n<MSG xmlns:xsi = "http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation = "unisysaodbsis.xsd">\n\t<META>${meta}</META>\n  ${body}\n</MSG>${tail}`;
const META = '<SNDR>AODB</SNDR><SEQN> 345935 </SNDR>';
const good = '<SNDR>AODB</SNDR>\n\t\t<SEQN>345935</SEQN><DTTM>20181105223126</DTTM><TYPE>flop</TYPE><STYP>gtdt</STYP>';

function failure(raw: string) {
  try {
    decodeEnvelope(raw);
  } catch (e) {
    if (e instanceof PipelineError) return `${e.failure.cls}: ${e.failure.detail}`;
    throw e;
  }
  return 'ok';
}

describe('SIS envelope', () => {
  it('decodes META tolerantly (spaces around =, tabs, trailing newlines, case)', () => {
    const e = decodeEnvelope(msg(good, undefined, '\n\n  \n'));
    expect([e.sndr, e.seqn, e.dttm, e.type, e.styp]).toEqual(['AODB', '345935', '20181105223126', 'FLOP', 'GTDT']);
    expect(identityKey(e, true)).toBe('AODB|FLOP|GTDT|345935|20181105');
    expect(identityKey(e, false)).toBe('AODB|FLOP|GTDT|345935');
  });

  it.each([
    ['not xml', 'MALFORMED: not well-formed XML'],
    [msg(META), 'MALFORMED: not well-formed XML'],
    [msg(good, undefined, '</MSG>junk'), 'MALFORMED: not well-formed XML'],
    ['<?xml version="1.0"?><!DOCTYPE MSG [<!ENTITY a "aaaa">]><MSG>&a;</MSG>', 'MALFORMED: DOCTYPE/ENTITY declarations are not accepted'],
    ['<OTHER/>', 'MALFORMED: root element is <OTHER>, expected <MSG>'],
    ['<MSG><FLOP/></MSG>', 'MALFORMED: no META element'],
    [msg('<SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20181105223126</DTTM><STYP>X</STYP>'), 'MALFORMED: META/TYPE missing or empty'],
    [msg(good, ''), 'MALFORMED: payload element missing after META (FLOP/GTDT)'],
    [msg(good, '<FLOP><FLID>1</FLID><REMC><![DATA[ x ]]></REMC></FLOP>'), "MALFORMED: not well-formed XML: '<!' must begin a comment or a CDATA section"],
    [msg(good, '<FLOP><FLID>1</FLID><REMC>a<!-c-->b</REMC></FLOP>'), "MALFORMED: not well-formed XML: '<!' must begin a comment or a CDATA section"],
    [msg(good.replace('345935', 'x1')), 'PROTOCOL: META/SEQN="x1" is not an integer'],
    [msg(good.replace('20181105223126', '20181305223126')), 'PROTOCOL: META/DTTM="20181305223126" is not yyyyMMddHHmmss'],
  ])('rejects %#', (raw, expected) => {
    expect(failure(raw)).toContain(expected);
  });

  it('builds the tree: text runs trimmed then decoded once, a comment inside a run, CDATA as it is, line ends normalised, attributes trimmed', () => {
    const n = parseXml('<?xml version="1.0"?>\r\n<R a=" x &amp;#65; " b=\'&#x4E2D;\'>\r\n <T> a <!-- c --> b <![CDATA[ <&> ]]> &amp;lt; &#65; </T><?pi x?><E/><F>\r\nl1\r\nl2\r</F></R>');
    expect(n).toEqual({
      tag: 'R',
      attrs: { a: 'x &#65;', b: '中' },
      text: '',
      children: [
        { tag: 'T', attrs: {}, text: 'a  b <&> &lt; A', children: [] },
        { tag: 'E', attrs: {}, text: '', children: [] },
        { tag: 'F', attrs: {}, text: 'l1\nl2', children: [] },
      ],
    });
  });

  it('re-serialises fragments canonically (SRVT/VIPF raw storage)', () => {
    const n = parseXml('<SRVT>\n  <SRTC> A&amp;B </SRTC>\n  <SRQT/>\n</SRVT>');
    expect(serialize(n)).toBe('<SRVT><SRTC>A&amp;B</SRTC><SRQT/></SRVT>');
  });
});
