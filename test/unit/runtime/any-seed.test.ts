// anySeed (lib/core/connections.ts): the broker list kafkajs seeds new connections from starts at
// a random broker, so that a new admin does not always ask the first one (down in a drill).
import { describe, expect, it } from 'vitest';
import { anySeed } from '../../../lib/core/connections.ts';

describe('anySeed', () => {
  it('every answer is the whole list, rotated; over many calls each broker comes first', () => {
    const brokers = ['k1:9092', 'k2:9092', 'k3:9092'];
    const seeds = anySeed(brokers);
    const first = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const list = seeds();
      expect([...list].sort()).toEqual(brokers);
      const k = brokers.indexOf(list[0]);
      expect(list).toEqual([...brokers.slice(k), ...brokers.slice(0, k)]);
      first.add(list[0]);
    }
    expect([...first].sort()).toEqual(brokers);
  });

  it('one broker: always that one', () => {
    expect(anySeed(['only:9092'])()).toEqual(['only:9092']);
  });
});
