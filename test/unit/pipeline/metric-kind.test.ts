// Metric labels never carry strings chosen by the sender.
import { describe, expect, it } from 'vitest';
import { buildRegistry, metricKind } from '../../../lib/app/composition.ts';

describe('metricKind: the kind label is bounded by the handler registry', () => {
  it.each([
    ['FLOP', 'REMC', 'FLOP/REMC'],
    ['FLOP', 'FDEL', 'FLOP/FDEL'],
    ['SCHD', 'DNLD', 'SCHD/DNLD'],
    ['GLST', 'ADD', 'GLST/ADD'],
    ['RSTA', 'DNLD', 'RSTA/DNLD'],
    ['EROR', 'RQRD', 'EROR/RQRD'],
    ['EROR', 'SLST', 'EROR/SLST'],
    ['EROR', '', 'EROR/other'],
    ['FLOP', 'WXYZ', 'FLOP/other'],
    ['SCHD', 'XXXX', 'SCHD/other'],
    ['ZZZZ', 'UPD', 'other'],
    ['ZZZZ', '', 'other'],
  ])('%s/%s → %s', (type, styp, label) => expect(metricKind(type, styp)).toBe(label));

  it('a kind as stored in PROC_STATE.KIND maps the same way', () => {
    const registry = buildRegistry();
    expect(['FLOP/REMC', 'ZZZZ/UPD', 'EROR', 'GLST/ADD', 'SCHD/X/Y', '', null].map((k) => registry.metricKindOf(k))).toEqual([
      'FLOP/REMC',
      'other',
      'EROR/other',
      'GLST/ADD',
      'SCHD/other',
      'unknown',
      'unknown',
    ]);
  });

  it('every kind registered exactly keeps its own label', () => {
    const registry = buildRegistry();
    for (const k of registry.kinds().filter((k) => !k.endsWith('/*'))) {
      const [type, styp] = k.split('/');
      expect(metricKind(type, styp)).toBe(k);
    }
  });

  it('a flood of invented kinds makes at most one series per handled TYPE plus one', () => {
    const types = new Set(
      buildRegistry()
        .kinds()
        .map((k) => k.split('/')[0]),
    );
    const labels = new Set<string>();
    for (let i = 0; i < 5000; i++) labels.add(metricKind(i % 2 ? `T${i}` : 'FLOP', `S${i}`));
    expect([...labels].sort()).toEqual(['FLOP/other', 'other']);
    expect(labels.size).toBeLessThanOrEqual(types.size + 1);
  });
});
