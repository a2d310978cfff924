// The decode worker's memory (lib/pipeline/decoder.ts, docs/decisions.md "Snapshots in bounded
// memory"): a job with a large body (a snapshot) is decoded by a worker of its own, ended once the
// job is answered; the ordinary worker waits meanwhile and decodes the next jobs again, warm. The answers are the ones the pump's own thread would have decoded. Real worker threads;
// no service needed.
import { afterAll, describe, expect, it } from 'vitest';
import { buildDecoder, buildRegistry } from '../../../lib/app/composition.ts';
import { slices } from '../../../lib/core/config.ts';
import { decodeMessage, LARGE_BODY } from '../../../lib/pipeline/decoding.ts';
import { bigSnapshot } from '../../support/fixtures.ts';
import { testConfig } from '../../support/env.ts';
import { sisMessage } from '../../support/services.ts';

const config = testConfig();
const decoder = buildDecoder(slices(config).pump, slices(config).airport);
const settings = { airport: slices(config).airport, includeDayBoundary: slices(config).pump.includeDayBoundary };
const registry = buildRegistry();
afterAll(() => decoder.close());

const flop = (seqn: number) => sisMessage({ type: 'FLOP', styp: 'STND', seqn, body: `<FLOP><FLID>${seqn}</FLID><FFID>X</FFID><STND>S${seqn}</STND></FLOP>` });

describe('the decode worker after a large body', () => {
  it('keeps its worker for ordinary bodies, decodes a snapshot of more than 2 MB in a worker of its own that ends with the job, takes the ordinary one back, and answers as the inline decode does', async () => {
    const small = [flop(1), flop(2), flop(3)];
    expect(await decoder.decode(small)).toEqual(small.map((b) => decodeMessage(registry, settings, b)));
    expect(await decoder.decode([flop(4)])).toEqual([decodeMessage(registry, settings, flop(4))]);
    expect(decoder.started).toBe(1);

    const snapshot = bigSnapshot(4_000, 1, { seqn: 5 });
    expect(snapshot.length).toBeGreaterThan(LARGE_BODY);
    // a smaller snapshot is an ordinary body
    const smaller = bigSnapshot(2_000, 1, { seqn: 9 });
    expect(smaller.length).toBeLessThan(LARGE_BODY);
    expect((await decoder.decode([smaller]))[0]).toMatchObject({ ok: true, ownBatch: true });
    expect(decoder.started).toBe(1);
    const [big, after] = await decoder.decode([snapshot, flop(6)]);
    expect(big).toEqual(decodeMessage(registry, settings, snapshot));
    expect(big).toMatchObject({ ok: true, entry: 'batch', ownBatch: true });
    expect(after).toBe('later'); // a snapshot is a batch of its own
    expect(decoder.started).toBe(2); // the snapshot's own worker

    expect(await decoder.decode([flop(6)])).toEqual([decodeMessage(registry, settings, flop(6))]);
    expect(await decoder.decode([flop(7)])).toEqual([decodeMessage(registry, settings, flop(7))]);
    expect(decoder.started).toBe(2); // the ordinary worker, taken back

    // and again: one more snapshot worker, the same ordinary one after it
    await decoder.decode([snapshot]);
    expect(await decoder.decode([flop(8)])).toEqual([decodeMessage(registry, settings, flop(8))]);
    expect(decoder.started).toBe(3);
    expect(decoder.overBudget).toBe(0);
  });

  it("prepare starts the large body's worker before its job: the job takes that one; an ordinary job instead ends it and takes the ordinary one back", async () => {
    const before = decoder.started;
    const snapshot = bigSnapshot(4_000, 1, { seqn: 11 });
    decoder.prepare([flop(9), flop(10)]); // no large body: nothing started
    expect(decoder.started).toBe(before);
    decoder.prepare([flop(10), snapshot]);
    decoder.prepare([snapshot]); // asked twice: still one worker
    expect(decoder.started).toBe(before + 1);
    expect(await decoder.decode([snapshot])).toEqual([decodeMessage(registry, settings, snapshot)]);
    expect(decoder.started).toBe(before + 1); // the job took the worker started ahead
    expect(await decoder.decode([flop(12)])).toEqual([decodeMessage(registry, settings, flop(12))]);
    expect(decoder.started).toBe(before + 1); // the ordinary worker, taken back

    decoder.prepare([snapshot]); // and then no large body after all
    expect(await decoder.decode([flop(13)])).toEqual([decodeMessage(registry, settings, flop(13))]);
    expect(decoder.started).toBe(before + 2);
    expect(await decoder.decode([flop(14)])).toEqual([decodeMessage(registry, settings, flop(14))]);
    expect(decoder.started).toBe(before + 2);
    expect(decoder.overBudget).toBe(0);
  });
});
