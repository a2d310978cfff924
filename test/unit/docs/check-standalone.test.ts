// scripts/check-standalone.ts catches every form of a citation the clone cannot follow: each form
// is planted in a line and must be reported; the same sentences without it must pass. The planted
// forms are assembled from parts (J), so that this file itself cites nothing.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { definedIds, ID_DOC, lineFindings } from '../../../scripts/check-standalone.ts';

/** Joins the parts of a planted form. */
const J = (...parts: string[]) => parts.join('');
const SEC = String.fromCharCode(0xa7);

const defined = definedIds(readFileSync(ID_DOC, 'utf8'));

describe('check:standalone', () => {
  it('reads the IDs docs/design.md defines: the invariants and the IDs table', () => {
    for (const id of ['INV-1', 'INV-10', 'C-1', 'C-9', 'D1', 'G-MAFL', 'G-RESP-GUARD']) expect(defined.has(id), id).toBe(true);
    expect(defined.has(J('US', '-09'))).toBe(false);
  });

  const planted: [string, RegExp][] = [
    [J('// made by the issue', '-14 session'), /issue or task number/],
    [J('// see iss', 'ue 14'), /issue or task number/],
    [J('// see iss', 'ues 3'), /issue or task number/],
    [J('// fixed in iss', 'ue #14'), /issue or task number/],
    [J('// fixed in Iss', 'ue#7'), /issue or task number/],
    [J('// the ta', 'sk-5 change'), /issue or task number/],
    [J('// as ta', 'sk #3 asked'), /issue or task number/],
    [J('// retention counts from the settlement, seed ', SEC, '9.3'), /section of an outside document/],
    [J("it('", SEC, "5.1: a flight taken over')"), /section of an outside document/],
    [J('// as se', 'ed 9.3 says'), /section of an outside document/],
    [J('// as se', 'eds section 4 says'), /section of an outside document/],
    [J('/** US', '-09 AC1: a new request expires the open one */'), /does not define \(US-\d+\)/],
    [J('// ADFT (US', '-04 AC2)'), /does not define \(US-\d+\)/],
    [J('// PROC_STATE (G', '-PROC-CLEANUP)'), /does not define \(G-[A-Z-]+\)/],
    [J('// the C', '-12 rule'), /does not define \(C-\d+\)/],
    [J('// nothing is deleted (D', '2)'), /does not define \(D\d\)/],
    [J('// INV', '-11 holds'), /does not define \(INV-\d+\)/],
    [J('`source .helper', '-env && npx vitest run`'), /path outside the repository/],
    [J('// read ../sha', 'red/spec/pipeline.md'), /path outside the repository/],
  ];
  for (const [line, want] of planted) {
    it(`catches ${line}`, () => {
      const found = lineFindings(line, defined);
      expect(found.join('; ')).toMatch(want);
    });
  }

  it('passes what the repository defines or what only looks alike', () => {
    for (const line of [
      '// nothing is deleted (D1); INV-10 holds; C-9 shape; G-MAFL; G-RESP-GUARD',
      "msg('RSTA', 'DNLD', '<RSTA><RSID>D1</RSID></RSTA>')",
      "{ name: 'encoded surrogate U+D800' }",
      '// the state topic re-seeded when missing; a re-seed resends rows',
      '// the issue is that the pump holds the head; tasks run in order',
      '| retention | … | 9406 |',
      '// docs/lifecycle.md "Inbox"',
    ])
      expect(lineFindings(line, defined), line).toEqual([]);
  });
});
