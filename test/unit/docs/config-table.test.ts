// Drift: README's configuration table (`| environment | key | default | what |`) is the list of
// lib/core/config.ts — every key with its environment name and default, each row with a
// description, no row for a key the code does not have, and every key a configuration slice
// (`SLICES`) hands to a module among them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeConfig, sliceKeys } from '../../../lib/core/config.ts';

const README = readFileSync(path.join(import.meta.dirname, '../../../README.md'), 'utf8');

interface Row {
  env: string;
  key: string;
  default: string;
  what: string;
}

/** The rows of the table headed `| environment | key | default | what |`. */
function tableRows(readme: string): Row[] {
  const lines = readme.split('\n');
  const at = lines.findIndex((l) => /^\| environment \| key \| default \| what \|/.test(l));
  if (at < 0) return [];
  const rows: Row[] = [];
  for (const l of lines.slice(at + 2)) {
    if (!l.startsWith('|')) break;
    const [, env, key, def, what] = l.split(/(?<!\\)\|/).map((c) => c.trim());
    rows.push({ env: env.replace(/^`|`$/g, ''), key, default: def.replace(/^`|`$/g, ''), what: what ?? '' });
  }
  return rows;
}

type Truth = { key: string; env: string; default: string }[];

function drift(readme: string, truth: Truth, inSlices: string[]): string[] {
  const rows = tableRows(readme);
  if (!rows.length) return ['README has no configuration table'];
  const byKey = new Map(rows.map((r) => [r.key, r]));
  const out: string[] = [];
  for (const t of truth) {
    const r = byKey.get(t.key);
    if (!r) out.push(`${t.key}: no row`);
    else {
      if (r.env !== t.env) out.push(`${t.key}: environment ${r.env}, the code reads ${t.env}`);
      if (r.default !== t.default) out.push(`${t.key}: default \`${r.default}\`, the code has \`${t.default}\``);
      if (!r.what) out.push(`${t.key}: no description`);
    }
  }
  for (const r of rows) if (!truth.some((t) => t.key === r.key)) out.push(`${r.key}: a row for a key the code does not have`);
  for (const k of inSlices) if (!byKey.has(k)) out.push(`${k}: read by a slice, not in the table`);
  return out;
}

describe('README configuration table vs lib/core/config.ts', () => {
  it('every key with its environment name, default and a description; every slice key', () => {
    expect(sliceKeys().length).toBeGreaterThan(40);
    expect(drift(README, describeConfig(), sliceKeys())).toEqual([]);
  });

  it('reports each planted drift', () => {
    const truth = describeConfig();
    const k = truth.find((t) => t.key === 'msgx.pipeline.apply-batch')!;
    const row = README.split('\n').find((l) => l.startsWith('| `MSGX_PIPELINE_APPLY_BATCH` |'))!;
    // a new key in the code only
    expect(drift(README, [...truth, { key: 'msgx.pipeline.new-knob', env: 'MSGX_PIPELINE_NEW_KNOB', default: '1' }], sliceKeys())).toEqual(['msgx.pipeline.new-knob: no row']);
    // a default changed in the code only
    expect(
      drift(
        README,
        truth.map((t) => (t === k ? { ...t, default: '200' } : t)),
        sliceKeys(),
      ),
    ).toEqual(['msgx.pipeline.apply-batch: default `500`, the code has `200`']);
    // a description dropped, a row left for a removed key
    expect(drift(README.replace(row, row.replace(/\| [^|]+ \|$/, '|  |')), truth, sliceKeys())).toEqual(['msgx.pipeline.apply-batch: no description']);
    expect(
      drift(
        README,
        truth.filter((t) => t !== k),
        sliceKeys(),
      ),
    ).toEqual(['msgx.pipeline.apply-batch: a row for a key the code does not have']);
    // a slice reading a key the table lacks
    expect(drift(README, truth, [...sliceKeys(), 'msgx.slice.only'])).toEqual(['msgx.slice.only: read by a slice, not in the table']);
  });
});
