// The tail's ordering rules (lib/pipeline/pump/tail.ts), one test each, with the mirror step and
// the terminal statement as promises the test ends when it wants.
import { describe, expect, it } from 'vitest';
import { MirrorBehind, overlapsNext, TailGate } from '../../../lib/pipeline/pump/tail.ts';
import type { Done } from '../../../lib/pipeline/pump/deps.ts';

type M = { h: { msg_id: number } };
const members = (...ids: number[]): M[] => ids.map((msg_id) => ({ h: { msg_id } }));

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Has `p` settled after the microtasks queued now have run? */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => (done = true),
    () => (done = true),
  );
  for (let i = 0; i < 10; i++) await Promise.resolve();
  return done;
}

const noMirrorFailure = async (): Promise<never> => {
  throw new Error('the mirror step did not fail');
};

describe('TailGate: the ordering rules of the tail', () => {
  it('R1: the next business transaction commits only after this mirror step succeeded', async () => {
    const gate = new TailGate<M>();
    expect(gate.commitGate()).toBeUndefined();
    const mirror = deferred();
    gate.start(members(1, 2), mirror.promise, async () => [{ msgId: 1, state: 'SUCCEEDED' }]);
    const beforeCommit = gate.commitGate()!();
    expect(await settled(beforeCommit)).toBe(false);
    mirror.resolve();
    await expect(beforeCommit).resolves.toBeUndefined();
  });

  it('R1: a failed mirror step rolls the next business transaction back (MirrorBehind) and is recorded on its first message', async () => {
    const gate = new TailGate<M>();
    const mirror = deferred();
    let terminalRan = false;
    gate.start(members(7, 8), mirror.promise, async () => {
      terminalRan = true;
      return [];
    });
    const beforeCommit = gate.commitGate()!();
    mirror.reject(new Error('redis down'));
    await expect(beforeCommit).rejects.toBeInstanceOf(MirrorBehind);
    const recorded: number[] = [];
    const out = await gate.settle(async (first) => {
      recorded.push(first.h.msg_id);
      return { msgId: first.h.msg_id, state: 'FAILED' };
    });
    expect(out).toEqual([{ msgId: 7, state: 'FAILED' }]);
    expect(recorded).toEqual([7]);
    expect(terminalRan).toBe(false); // INV-10: no terminal statement without its mirror step
  });

  it('R2: the terminal statement starts only after the mirror step, and settle waits for it (the next mirror step comes after)', async () => {
    const gate = new TailGate<M>();
    const mirror = deferred();
    const terminal = deferred<Done[]>();
    let terminalStarted = false;
    gate.start(members(3), mirror.promise, () => {
      terminalStarted = true;
      return terminal.promise;
    });
    expect(gate.phase).toBe('mirroring');
    const settling = gate.settle(noMirrorFailure);
    expect(await settled(settling)).toBe(false);
    expect(terminalStarted).toBe(false);
    mirror.resolve();
    await settled(Promise.resolve());
    expect(terminalStarted).toBe(true);
    expect(await settled(settling)).toBe(false);
    terminal.resolve([{ msgId: 3, state: 'SUCCEEDED' }]);
    expect(await settling).toEqual([{ msgId: 3, state: 'SUCCEEDED' }]);
    expect(gate.phase).toBe('none');
  });

  it('R2: a failed terminal statement is thrown from settle', async () => {
    const gate = new TailGate<M>();
    gate.start(members(4), Promise.resolve(), async () => {
      throw new Error('terminal failed');
    });
    await expect(gate.settle(noMirrorFailure)).rejects.toThrow('terminal failed');
  });

  it('R3: the batch whose tail runs is left out of the heads read, until it is settled', async () => {
    const gate = new TailGate<M>();
    expect([...gate.excluded()]).toEqual([]);
    gate.start(members(5, 6), Promise.resolve(), async () => []);
    expect([...gate.excluded()]).toEqual([5, 6]);
    await gate.settle(noMirrorFailure);
    expect([...gate.excluded()]).toEqual([]);
  });

  it('R4: at most one tail runs; ended waits for it without recording anything', async () => {
    const gate = new TailGate<M>();
    const mirror = deferred();
    gate.start(members(9), mirror.promise, async () => []);
    expect(() => gate.start(members(10), Promise.resolve(), async () => [])).toThrow(/running already/);
    const ended = gate.ended();
    expect(await settled(ended)).toBe(false);
    mirror.reject(new Error('redis down'));
    await expect(ended).resolves.toBeUndefined();
    expect(gate.phase).toBe('mirror-failed');
  });

  it('R5: the tail overlaps the next batch only in drain, with nothing cut and no large message', () => {
    expect(overlapsNext({ drain: true, cut: false, large: false })).toBe(true);
    expect(overlapsNext({ drain: false, cut: false, large: false })).toBe(false); // tick ends every step first
    expect(overlapsNext({ drain: true, cut: true, large: false })).toBe(false); // the cut message's failure follows the terminal step
    expect(overlapsNext({ drain: true, cut: false, large: true })).toBe(false); // a large message's release follows its steps
  });
});
