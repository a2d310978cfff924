// Drift: the topic settings docs/asyncapi.yaml promises (name, partitions, cleanup policy and
// retention, key) are the ones the gateway provisions: the dispatchers' TopicSpec (workers/*-dispatch.ts,
// passed to ensureTopics), the config defaults (msgx.kafka.*, msgx.pipeline.event-retention),
// topicSettings (lib/dispatch/kafka.ts) and the keys the dispatchers send. The comparison is run on
// mutated copies of the document too: each planted drift must be reported.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeConfig, parseDuration } from '../../../lib/core/config.ts';
import { topicSettings } from '../../../lib/dispatch/kafka.ts';
import { SCHD_KEY } from '../../../lib/dispatch/schd.ts';
import { type AsyncApiDoc, loadAsyncApi } from '../../support/contract.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const CHANNELS = ['msg', 'schd', 'state'] as const;
type Channel = (typeof CHANNELS)[number];
const def = (key: string) => describeConfig().find((c) => c.key === key)!.default;

interface Provisioned {
  topic: string;
  partitions: number;
  settings: Record<string, string>;
  /** 'FLID' (keyed by the flight) or the fixed key. */
  key: string;
}

/** What the gateway creates for a channel: the worker's TopicSpec literal, completed by the defaults. */
function provisioned(channel: Channel): Provisioned {
  const src = readFileSync(path.join(ROOT, `workers/${channel}-dispatch.ts`), 'utf8');
  const m = new RegExp(`\\{ topic: slices\\(rt\\.config\\)\\.kafka\\.${channel}Topic((?:, \\w+: \\w+)*) \\}`).exec(src);
  if (!m) throw new Error(`workers/${channel}-dispatch.ts: no TopicSpec literal for the ${channel} topic`);
  const fields = Object.fromEntries([...m[1].matchAll(/, (\w+): (\w+)/g)].map((f) => [f[1], f[2]]));
  const compacted = fields.compacted === 'true';
  return {
    topic: def(`msgx.kafka.${channel}-topic`),
    partitions: Number(fields.partitions ?? def('msgx.kafka.partitions')),
    // replication factor 1 (one broker): min.insync.replicas is not a consumer's concern
    settings: topicSettings(parseDuration(def('msgx.pipeline.event-retention')), 1, compacted),
    key: channel === 'schd' ? SCHD_KEY : 'FLID',
  };
}

/** Every difference between what the document says of a channel's topic and what is provisioned. */
function topicDrift(doc: AsyncApiDoc, channel: Channel, p: Provisioned): string[] {
  const out: string[] = [];
  const ch = doc.channels[channel];
  const k = ch.bindings?.kafka ?? {};
  const cfg: Record<string, unknown> = k.topicConfiguration ?? {};
  const same = (what: string, documented: unknown, actual: unknown) => {
    if (String(documented) !== String(actual)) out.push(`${channel}: ${what} documented ${JSON.stringify(documented)}, provisioned ${JSON.stringify(actual)}`);
  };
  same('address', ch.address, p.topic);
  same('binding topic', k.topic, p.topic);
  same('partitions', k.partitions, p.partitions);
  same('cleanup.policy', Array.isArray(cfg['cleanup.policy']) ? (cfg['cleanup.policy'] as string[]).join(',') : cfg['cleanup.policy'], p.settings['cleanup.policy']);
  same('retention.ms', cfg['retention.ms'], p.settings['retention.ms']);
  same('delete.retention.ms', cfg['delete.retention.ms'], p.settings['delete.retention.ms']);
  const flid = doc.components.schemas.Flid.pattern;
  for (const [name, ref] of Object.entries(ch.messages as Record<string, { $ref: string }>)) {
    const msg = doc.components.messages[ref.$ref.split('/').pop()!];
    const key = msg.bindings?.kafka?.key ?? {};
    if (p.key === 'FLID') same(`${name} key pattern`, key.pattern, flid);
    else same(`${name} key`, key.const, p.key);
  }
  return out;
}

const doc = loadAsyncApi();
const mutated = (edit: (d: AsyncApiDoc) => void) => {
  const d = structuredClone(doc);
  edit(d);
  return d;
};

describe('docs/asyncapi.yaml topics vs provisioning', () => {
  for (const ch of CHANNELS) {
    it(`${ch}: name, partitions, cleanup policy, retention and key are the provisioned ones`, () => {
      expect(topicDrift(doc, ch, provisioned(ch))).toEqual([]);
    });
  }

  it('the provisioning read is the real one: schd 1 partition, state compacted, msg the default', () => {
    expect(provisioned('schd').partitions).toBe(1);
    expect(provisioned('msg').partitions).toBe(Number(def('msgx.kafka.partitions')));
    expect(provisioned('state').settings['cleanup.policy']).toBe('compact');
    expect(provisioned('msg').settings['cleanup.policy']).toBe('delete');
  });

  it('reports each planted drift', () => {
    const cases: [Channel, (d: AsyncApiDoc) => void, RegExp][] = [
      ['schd', (d) => (d.channels.schd.bindings.kafka.partitions = 6), /schd: partitions documented 6, provisioned 1/],
      ['msg', (d) => (d.channels.msg.bindings.kafka.partitions = 1), /msg: partitions/],
      ['state', (d) => (d.channels.state.bindings.kafka.topicConfiguration['cleanup.policy'] = ['delete']), /state: cleanup.policy/],
      ['state', (d) => (d.channels.state.bindings.kafka.topicConfiguration['delete.retention.ms'] = 1), /state: delete.retention.ms/],
      ['msg', (d) => (d.channels.msg.bindings.kafka.topicConfiguration['retention.ms'] = 1), /msg: retention.ms/],
      ['schd', (d) => (d.components.messages.SchdBatch.bindings.kafka.key.const = 'SCHD'), /schd: batch key/],
      ['state', (d) => (d.components.messages.StateTombstone.bindings.kafka.key.pattern = '^.*$'), /state: tombstone key pattern/],
      ['msg', (d) => (d.channels.msg.address = 'msgx.flight.events'), /msg: address/],
    ];
    for (const [ch, edit, want] of cases) expect(topicDrift(mutated(edit), ch, provisioned(ch)).join('\n')).toMatch(want);
  });
});

/** docs/consumers.md's topic table: the partitions column of each topic's row ("… (6) when …" or "1 when …"). */
function consumersPartitions(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^\| `(msgx\.flight\.\w+)` \|(.*)$/gm)) {
    const cells = m[2].split(/(?<!\\)\|/).map((c) => c.trim());
    const col = cells[3] ?? '';
    const n = /\((\d+)\)/.exec(col)?.[1] ?? /^(\d+)\b/.exec(col)?.[1];
    if (n) out[m[1]] = Number(n);
  }
  return out;
}

describe('docs/consumers.md topic table vs provisioning', () => {
  const text = readFileSync(path.join(ROOT, 'docs/consumers.md'), 'utf8');
  const want = Object.fromEntries(CHANNELS.map((ch) => [provisioned(ch).topic, provisioned(ch).partitions]));

  it('gives each topic the partitions the gateway creates it with', () => {
    expect(consumersPartitions(text)).toEqual(want);
  });

  it('reports a planted drift (schd with 6 partitions)', () => {
    const planted = text.replace('| 1 when the gateway creates it |', '| 6 when the gateway creates it |');
    expect(planted).not.toBe(text);
    expect(consumersPartitions(planted)['msgx.flight.schd']).toBe(6);
    expect(consumersPartitions(planted)).not.toEqual(want);
  });
});
