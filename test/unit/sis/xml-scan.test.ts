// The one XML pass (lib/sis/scan.ts) that every message goes through before the tree is built:
// the same reasons as before for what was refused before, a reason for what the old checks let
// through, and time linear in the length of the text whatever its shape. Linearity is a ratio
// measured in this test (the fastest of several runs, generous bound): the pathological shapes of
// 64 KB and 1 MB against a plain message of the same size, so the busy machine cancels out.
import { describe, expect, it } from 'vitest';
import { checkXml } from '../../../lib/sis/scan.ts';
import { expand, expandAll, parseXml, type XmlNode } from '../../../lib/sis/xml.ts';

const env = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20261201083000</DTTM><TYPE>FLOP</TYPE><STYP>REMC</STYP></META>${body}</MSG>`;
const fill = (unit: string, size: number) => unit.repeat(Math.ceil(size / unit.length));
const refusal = (xml: string) => {
  try {
    checkXml(xml);
    return 'accepted';
  } catch (e) {
    return (e as Error).message;
  }
};

describe('checkXml: reasons', () => {
  it.each([
    ['', /^not well-formed XML: Start tag expected\. \(line 1\)$/],
    ['this is not xml', /^not well-formed XML: char 't' is not expected\. \(line 1, col 1\)$/],
    ['<MSG><A>x</MSG>', /^not well-formed XML: Expected closing tag 'A' \(opened in line 1, col 6\) instead of closing tag 'MSG'\./],
    ['<MSG>', /^not well-formed XML: Unclosed tag 'MSG'\. \(line 1, col 1\)$/],
    [`<MSG><${'a'.repeat(100_000)}></MSG>`, /^not well-formed XML: Expected closing tag 'a{40}…' \(opened in line 1, col 6\) instead of closing tag 'MSG'\. \(line 1, col \d+\)$/],
    ['<MSG></MSG>junk', /^not well-formed XML: Extra text at the end/],
    ['<MSG/><MSG/><MSG></MSG>', /^expected one root element, found 3$/],
    ['<MSG>a & b</MSG>', /^not well-formed XML: char '&' is not expected\./],
    ['<MSG>&foo;</MSG>', /^not well-formed XML: undeclared entity reference &foo; \(line 1, col 6\)$/],
    ['<MSG a="&#xFFFE;"/>', /^not well-formed XML: character reference &#xFFFE; names a character not allowed in XML/],
    ['<MSG>&#12345678901234567890;</MSG>', /character reference &#12345678901234567890; names a character not allowed/],
    ['<MSG a="1" a="2"/>', /^not well-formed XML: Attribute 'a' is repeated\./],
    ['<MSG b/>', /^not well-formed XML: boolean attribute 'b' is not allowed\./],
    ['<MSG b="1"c="2"/>', /^not well-formed XML: Attribute 'c' has no space in starting\./],
    ['<MSG b=1/>', /^not well-formed XML: Attribute 'b' is without value\./],
    ['<MSG>\n\u0007</MSG>', /^not well-formed XML: character U\+0007 is not allowed in XML \(line 2, col 1\)$/],
    ['<MSG><!-- \uDC00 --></MSG>', /^not well-formed XML: character U\+DC00 is not allowed in XML/],
    ['<MSG><?pi \uFFFF?></MSG>', /^not well-formed XML: character U\+FFFF is not allowed in XML/],
    ['<MSG a="1<2"/>', /^not well-formed XML: '<' is not allowed in the value of attribute a of <MSG>/],
    ['<MSG>a ]]> b</MSG>', /^not well-formed XML: "\]\]>" is not allowed in text/],
    ['<MSG><constructor/></MSG>', /^element name "constructor" is not accepted \(reserved JavaScript property name\) \(line 1, col 6\)$/],
    ['<MSG __proto__="x"/>', /^attribute name "__proto__" is not accepted/],
    [`<MSG>${'<N>'.repeat(33)}${'</N>'.repeat(33)}</MSG>`, /^elements nested deeper than 32 levels \(<N> at line 1, col \d+\)$/],
    ['<!doctype MSG [<!ENTITY a "b">]><MSG>&a;</MSG>', /^DOCTYPE\/ENTITY declarations are not accepted$/],
    ['<MSG><!ELEMENT a ANY></MSG>', /^not well-formed XML: '<!' must begin a comment or a CDATA section/],
    ['<![CDATA[x]]><MSG/>', /^not well-formed XML: CDATA section outside the root element/],
    ['\n<?xml version="1.0"?><MSG/>', /^not well-formed XML: XML declaration allowed only at the start of the document\./],
    [env(`<FLOP/>${'<!--'.repeat(1000)}`), /^not well-formed XML: comment is not closed \(line 2, col \d+\)$/],
    [env(`<FLOP/><?pi ${'<!--'.repeat(1000)}`), /^not well-formed XML: processing instruction is not closed/],
    [env(`<FLOP/>${'<![CDATA['.repeat(1000)}`), /^not well-formed XML: CDATA section is not closed/],
  ])('refuses %#', (xml, reason) => {
    expect(refusal(xml)).toMatch(reason);
  });

  it('accepts what SIS sends and XML allows: declaration, BOM, comments and PIs around the root, CDATA, references, astral characters', () => {
    for (const xml of [
      env('<FLOP><FLID>101</FLID><REMC>航班 &amp; &#x4E2D;&#65; 😀 ]] &gt;</REMC></FLOP>'),
      `\uFEFF${env('<FLOP GTNO = "1"\tB=\'x"y\'/>')}\n<!-- trailing -->\n`,
      env(`<FLOP><![CDATA[ <&]] ]]><!-- a -- b --><?pi ${'<!--'.repeat(100)}?></FLOP>`),
    ])
      expect(refusal(xml)).toBe('accepted');
    expect(parseXml(env('<FLOP><REMC>A&#65;&amp;#65;</REMC></FLOP>')).children[1].children[0].text).toBe('AA&#65;');
  });
});

describe('checkXml: time linear in the length, whatever the shape', () => {
  const shapes: Record<string, (size: number) => string> = {
    'unterminated <!-- repeated': (s) => env(`<FLOP><FLID>101</FLID></FLOP>${fill('<!--', s)}`),
    "PI holding '<!--' repeated (well-formed)": (s) => env(`<FLOP><FLID>101</FLID></FLOP><?pi ${fill('<!--', s)}?>`),
    'unterminated <![CDATA[ repeated': (s) => env(`<FLOP/>${fill('<![CDATA[', s)}`),
    'unterminated <? repeated': (s) => env(`<FLOP/>${fill('<?a ', s)}`),
    "']]' repeated in text": (s) => env(`<FLOP><REMC>${fill(']]', s)}</REMC></FLOP>`),
    '&amp; repeated': (s) => env(`<FLOP><REMC>${fill('&amp;', s)}</REMC></FLOP>`),
    'white space in a start tag': (s) => env(`<FLOP${fill(' ', s)}/>`),
    'a long attribute value ending in <': (s) => env(`<FLOP a="${fill('x', s)}<"/>`),
    'closed comments repeated': (s) => env(`<FLOP>${fill('<!-- c -->', s)}</FLOP>`),
    'small elements repeated': (s) => env(`<FLOP>${fill('<R a="1">x</R>', s)}</FLOP>`),
    'one long text': (s) => env(`<FLOP><REMC>${fill('abcdefgh ', s)}</REMC></FLOP>`),
  };
  /** A plain message: a schedule of flight records, the shape of the big messages SIS sends. */
  const plain = (s: number) => env(`<SCHD><RECS>1</RECS>${fill('<FLTR><FLID>1001</FLID><ALCD>XX</ALCD><FLNO>XX1001</FLNO><SODT>01DEC260800</SODT><REMC>on time</REMC></FLTR>', s)}</SCHD>`);
  /** The fastest of `reps` runs: what the scan costs, with another process's time slices on the machine left out. */
  const fastest = (f: () => void, reps = 7) => {
    let best = Number.POSITIVE_INFINITY;
    for (let r = 0; r < reps; r++) {
      const a = performance.now();
      f();
      best = Math.min(best, performance.now() - a);
    }
    return best;
  };
  const run = (xml: string) => () => {
    try {
      checkXml(xml);
    } catch {
      /* refusals count too */
    }
  };

  it.each([64 * 1024, 1024 * 1024])('%i characters: every shape within 10 x the time of a plain message of that size', (size) => {
    const base = plain(size);
    fastest(run(base), 3); // warm up
    const ratios: Record<string, number> = {};
    for (const [name, make] of Object.entries(shapes)) {
      const xml = make(size);
      fastest(run(xml), 2); // warm up (the first runs of a code path are compiled, not measured)
      const plainMs = Math.max(fastest(run(base)), 0.05);
      ratios[name] = Math.round((fastest(run(xml)) / plainMs) * 10) / 10;
    }
    // a quadratic scan is ~1,000 x (64 KB) to ~20,000 x (1 MB) slower than the plain message; every
    // shape measured 0–4.5 x (fastest of 7), and 10.9 x once as a median of 7 in a full suite's load
    expect(Object.entries(ratios).filter(([, r]) => r > 10)).toEqual([]);
  });
});

describe('lazy elements: left unbuilt, then built from their source, they are what the whole parse builds', () => {
  const LAZY = { parent: 'SCHD', child: 'FLTR' };
  const lazyNodes = (root: XmlNode) => root.children.flatMap((c) => c.children).filter((n) => n.raw !== undefined);
  it.each([
    ['plain records', '<SCHD><RECS>2</RECS><FLTR><FLID>1</FLID></FLTR><FLTR><FLID>2</FLID></FLTR></SCHD>', 2],
    [
      'attributes, references, CDATA holding an end tag, a comment, CR LF',
      '<SCHD><FLTR  A=" x &amp; y "><FLID>1</FLID><REMC>a &lt;b&gt; &#x4E2D;\r\n<![CDATA[</FLTR> ]]>c<!-- </FLTR> --></REMC></FLTR></SCHD>',
      1,
    ],
    ['a self-closing record and one with text of its own', '<SCHD><FLTR/><FLTR> t <FLID>3</FLID> u </FLTR></SCHD>', 2],
    ['nested elements of the same name', '<SCHD><FLTR><FLTR><FLID>4</FLID></FLTR></FLTR><FLTR><FLID>5</FLID></FLTR></SCHD>', 2],
    ['FLTR outside SCHD, SCHD deeper than the payload: not lazy', '<FLOP><FLTR><FLID>6</FLID></FLTR><X><SCHD><FLTR><FLID>7</FLID></FLTR></SCHD></X></FLOP>', 0],
  ] as [string, string, number][])('%s', (_, body, lazyCount) => {
    const whole = parseXml(env(body));
    const lazy = parseXml(env(body), LAZY);
    expect(lazyNodes(lazy)).toHaveLength(lazyCount);
    for (const n of lazyNodes(lazy)) expect(n.children).toEqual([]);
    expect(expandAll(lazy)).toEqual(whole);
    const built = lazy.children.flatMap((c) => c.children.map(expand));
    expect(built).toEqual(whole.children.flatMap((c) => c.children));
  });

  it('a document refused whole is refused lazily with the same reason', () => {
    const bad = env('<SCHD><FLTR><FLID>1</FLID></FLTR><FLTR><FLID>2</FLTR></SCHD>');
    const reason = (f: () => unknown) => {
      try {
        f();
        return 'accepted';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(reason(() => parseXml(bad, LAZY))).toBe(reason(() => parseXml(bad)));
    expect(reason(() => parseXml(bad))).not.toBe('accepted');
  });
});

describe('the tree: text runs, blanks, names', () => {
  /** An element as [tag, text, children], attributes left out (none in these documents but where named). */
  type Shape = [string, string, Shape[]];
  const shape = (n: XmlNode): Shape => [n.tag, n.text, n.children.map(shape)];
  it.each([
    [
      'blanks between tags are no text',
      '<a>\n  <b>x</b>\n  <c/>\n</a>',
      [
        'a',
        '',
        [
          ['b', 'x', []],
          ['c', '', []],
        ],
      ],
    ],
    [
      'runs around child elements, each trimmed, joined',
      '<a> p <b/> q <c>r</c> s </a>',
      [
        'a',
        'pqs',
        [
          ['b', '', []],
          ['c', 'r', []],
        ],
      ],
    ],
    ['a comment does not end a run: trimmed as one', '<a>  x  <!-- c -->  y  </a>', ['a', 'x    y', []]],
    ['a comment after the text, blanks before the next', '<a>x<!--c-->  </a>', ['a', 'x', []]],
    ['blanks, a comment, then text', '<a>  <!--c-->y</a>', ['a', 'y', []]],
    ['CDATA kept as it is, the runs around it trimmed', '<a> <![CDATA[ raw ]]> t </a>', ['a', 'raw t', []]],
    ['a processing instruction ends a run', '<a>1<?p?>2</a>', ['a', '12', []]],
    [
      'what trim() removes besides XML blanks (no-break, ideographic space, BOM)',
      '<a>\u3000x\u3000<b>\u00a0 s \u00a0</b><c>\ufeffy</c></a>',
      [
        'a',
        'x',
        [
          ['b', 's', []],
          ['c', 'y', []],
        ],
      ],
    ],
    ['line ends and references in text', '<a>\r\n t &amp;#65; &#65;\r\n</a>', ['a', 't &#65; A', []]],
    [
      'names across documents: the same name, a longer one, one that shares its start',
      '<FLID><FLIDX>1</FLIDX><FLI/><FLIGHT_NUMBER_LONG>2</FLIGHT_NUMBER_LONG></FLID>',
      [
        'FLID',
        '',
        [
          ['FLIDX', '1', []],
          ['FLI', '', []],
          ['FLIGHT_NUMBER_LONG', '2', []],
        ],
      ],
    ],
  ] as [string, string, Shape][])('%s', (_, xml, expected) => {
    expect(shape(parseXml(xml))).toEqual(expected);
    expect(shape(parseXml(xml))).toEqual(expected); // again: the names seen in the first parse are reused
  });

  it('attributes: quoted values holding ">" or the other quote, a blank before "/>"', () => {
    const root = parseXml(`<a b="1>2" c='x"y' d = " v "><e f="1" /><g/></a>`);
    expect(root.attrs).toEqual({ b: '1>2', c: 'x"y', d: 'v' });
    expect(root.children.map((c) => [c.tag, c.attrs, c.children.length])).toEqual([
      ['e', { f: '1' }, 0],
      ['g', {}, 0],
    ]);
  });
});
