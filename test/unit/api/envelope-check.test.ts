// The api's envelope check reads META from a skeleton of the document after the one XML pass,
// without building the whole tree: it must come to the same answer as the pump's full decode
// (lib/sis/envelope.ts decodeEnvelope) for every message, good or bad.
import { describe, expect, it } from 'vitest';
import { checkEnvelope, EnvelopeChecker, envelopeOf, MAX_QUEUED } from '../../../lib/api/envelope-check.ts';
import { PipelineError } from '../../../lib/core/errors.ts';
import { decodeEnvelope } from '../../../lib/sis/envelope.ts';

const meta = (f: Record<string, string>) =>
  `<META>${Object.entries(f)
    .map(([k, v]) => `<${k}>${v}</${k}>`)
    .join('')}</META>`;
const good = { SNDR: 'AODB', SEQN: '42', DTTM: '20261201083000', TYPE: 'flop', STYP: 'remc' };
const outcome = (f: () => unknown) => {
  try {
    return f();
  } catch (e) {
    if (e instanceof PipelineError) return `${e.failure.cls}: ${e.failure.detail}`;
    throw e;
  }
};

describe('envelope from the skeleton = envelope from the full tree', () => {
  it.each([
    `<?xml version="1.0"?>\n<MSG>${meta(good)}<FLOP><FLID>1</FLID></FLOP></MSG>`,
    `<MSG a="1">\n  <!-- c -->${meta({ ...good, SNDR: ' A&amp;B ' })}<FLOP/><?pi x?></MSG>\n`,
    `<MSG><FLOP/>${meta(good)}${meta({ ...good, SEQN: '7' })}</MSG>`,
    `<MSG>${meta(good)}</MSG>`,
    `<MSG><META/><FLOP/></MSG>`,
    `<MSG><FLOP/></MSG>`,
    `<FOO>${meta(good)}<FLOP/></FOO>`,
    `<MSG>${meta({ ...good, SEQN: '12a' })}<FLOP/></MSG>`,
    `<MSG>${meta({ ...good, DTTM: '20260231120000' })}<FLOP/></MSG>`,
    `<MSG>${meta({ ...good, TYPE: '' })}<FLOP/></MSG>`,
    `<MSG><META><X><SEQN>1</SEQN></X></META><FLOP/></MSG>`,
    `<MSG>${meta(good)}<FLOP>${'<!--'.repeat(1000)}</FLOP></MSG>`,
    `<MSG>${meta(good)}<FLOP/></MSG><MSG/>`,
    'not xml',
  ])('%#', (xml) => {
    const full = outcome(() => {
      const e = decodeEnvelope(xml);
      return { type: e.type, styp: e.styp, sndr: e.sndr, seqn: e.seqn };
    });
    expect(outcome(() => envelopeOf(xml))).toEqual(full);
    const r = checkEnvelope(new TextEncoder().encode(xml));
    if (typeof full === 'string') expect(r.ok ? 'accepted' : `${r.error.toUpperCase()}: ${r.reason}`).toBe(full);
    else expect(r).toEqual({ ok: true, meta: full, text: xml });
  });
});

describe('EnvelopeChecker: a client that goes away cancels its check', () => {
  const big = (n: number) => new TextEncoder().encode(`<MSG>${meta(good)}<FLOP><REMC>${'a'.repeat(n)}</REMC></FLOP></MSG>`);

  it('queued checks of gone clients end as client-gone and free their places; the checker keeps working', async () => {
    const checker = new EnvelopeChecker();
    try {
      const gone = new AbortController();
      const pending = Array.from({ length: MAX_QUEUED }, () => checker.check(big(2_000_000), gone.signal));
      gone.abort();
      const results = await Promise.all(pending);
      expect(results.every((r) => !r.ok && r.status === 499 && r.error === 'client-gone')).toBe(true);
      // the queue is free again: as many new checks as it holds are all taken and accepted
      const next = await Promise.all(Array.from({ length: MAX_QUEUED }, () => checker.check(big(100_000))));
      expect(next.map((r) => r.ok)).toEqual(Array(MAX_QUEUED).fill(true));
    } finally {
      await checker.close();
    }
  });

  it('an already gone client is not queued', async () => {
    const checker = new EnvelopeChecker();
    try {
      const gone = new AbortController();
      gone.abort();
      expect(await checker.check(big(100_000), gone.signal)).toMatchObject({ ok: false, status: 499 });
    } finally {
      await checker.close();
    }
  });
});
