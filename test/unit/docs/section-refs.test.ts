// Drift: every place that names a section of a document — `docs/operations.md "Backfill"`,
// `README "Operator tasks"`, `operations.md#derived-stores-redis` — names one that exists, so a
// reader (or an alert's runbook link) never lands on a heading that was renamed or cut. A quoted
// name matches a heading that starts with it (`…` stands for any text; backticks ignored); in
// BENCHMARKS.md and RELIABILITY.md a benchmark or run id (`B7`, `R9`) matches its table row.
// An anchor matches a heading's GitHub slug. docs/history/ is the archive and is not checked.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const SKIP = new Set(['node_modules', '.git', '.local', 'history', 'test-output', 'deploy']);
// files that plant broken or made-up references on purpose
const SELF = new Set(['test/unit/docs/section-refs.test.ts', 'test/integration/runbook.test.ts', 'test/unit/prometheus-alerts.test.ts', 'test/unit/docs/check-standalone.test.ts']);

function files(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    if (SKIP.has(e.name) || e.name.startsWith('.')) continue;
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) files(rel, out);
    else if (/\.(ts|md|ya?ml|cjs|mjs)$/.test(e.name) && !SELF.has(rel)) out.push(rel);
  }
  return out;
}

const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

const clean = (s: string) => s.replace(/`/g, '').replace(/\s+/g, ' ').trim();

/** The document a reference names, relative to the root, or undefined when the repository has no such file. */
function resolve(prefix: string, name: string): string | undefined {
  const candidates = prefix ? [`${prefix}${name}.md`] : [`docs/${name}.md`, `${name}.md`];
  return candidates.find((c) => existsSync(path.join(ROOT, c)) && statSync(path.join(ROOT, c)).isFile());
}

const headingsOf = (text: string) =>
  text
    .split('\n')
    .filter((l) => /^#{1,6} /.test(l))
    .map((l) => clean(l.replace(/^#+ /, '')));

/** Every broken section reference in `texts` (file → content), resolved against `docs` (file → content). */
function brokenRefs(texts: Record<string, string>, docs: (f: string) => string): string[] {
  const out: string[] = [];
  for (const [file, raw] of Object.entries(texts)) {
    // one line per statement: comment markers at line starts removed, so a name broken over lines is whole
    const text = raw.replace(/\n[ \t]*(?:\/\/|\*|#)?[ \t]*/g, ' ');
    for (const m of text.matchAll(/((?:[\w-]+\/)*)([A-Za-z][\w-]*)(?:\.md)?#([a-z0-9_-]+)/g)) {
      if (!m[0].includes('.md#')) continue;
      const doc = resolve(m[1], m[2]);
      if (!doc) continue;
      if (!headingsOf(docs(doc)).some((h) => slug(h) === m[3])) out.push(`${file}: ${doc}#${m[3]}: no such heading`);
    }
    for (const m of text.matchAll(/((?:[\w-]+\/)*)([A-Za-z][\w-]*)(?:\.md)?`?,? ["“]([^"”]{2,120})["”]/g)) {
      if (!/\.md|^README$/.test(m[0].slice(m[1].length, m[1].length + m[2].length + 3)) && m[2] !== 'README') continue;
      const doc = resolve(m[1], m[2]);
      if (!doc) continue;
      const cite = clean(m[3]);
      const content = docs(doc);
      const re = new RegExp(`^${cite.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/…/g, '.*')}(?![\\p{L}\\p{N}])`, 'iu');
      const ok = headingsOf(content).some((h) => re.test(h)) || (/^(BENCHMARKS|RELIABILITY)\.md$/.test(doc) && new RegExp(`^\\| ${cite} [|(]`, 'm').test(content));
      if (!ok) out.push(`${file}: ${doc} "${cite}": no such section`);
    }
  }
  return out;
}

const read = (f: string) => readFileSync(path.join(ROOT, f), 'utf8');
const ALL = Object.fromEntries(files('').map((f) => [f, read(f)]));

describe('cited sections and anchors vs the headings of the documents', () => {
  it('every cited section exists', () => {
    expect(Object.keys(ALL).length).toBeGreaterThan(200);
    expect(brokenRefs(ALL, read)).toEqual([]);
  });

  it('reports each planted drift', () => {
    const renamed = (f: string) => (f === 'docs/operations.md' ? read(f).replace('## Backfill', '## Backfilling') : read(f));
    expect(brokenRefs({ 'x.ts': '// see docs/operations.md "Backfill"' }, renamed)).toEqual(['x.ts: docs/operations.md "Backfill": no such section']);
    expect(brokenRefs({ 'ops/x.yml': 'runbook: "docs/operations.md#backfill"' }, renamed)).toEqual(['ops/x.yml: docs/operations.md#backfill: no such heading']);
    expect(brokenRefs({ 'x.md': 'README "Operator chores"' }, read)).toEqual(['x.md: README.md "Operator chores": no such section']);
    expect(brokenRefs({ 'x.ts': '// RELIABILITY.md "R42"' }, read)).toEqual(['x.ts: RELIABILITY.md "R42": no such section']);
    expect(brokenRefs({ 'x.ts': '// docs/decisions.md "Derived\n// topics" and RELIABILITY.md "R9"' }, read)).toEqual([]);
  });
});
