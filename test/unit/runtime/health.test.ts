// lib/runtime/health.ts: when a condition counts as away and back, and what it logs (one line
// each way, the work's failures counted while away, a quiet line at most once a minute).
import { afterEach, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Health } from '../../../lib/runtime/health.ts';
import { keptFailed } from '../../../lib/runtime/dependency-checks.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function logged() {
  const lines: { level: number; msg: string }[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { log, lines, msgs: () => lines.map((l) => l.msg) };
}

let health: Health | undefined;
afterEach(async () => {
  await health?.close();
});

describe('readiness conditions', () => {
  it('a kept connection that stops answering is away at once; one failed fresh connect is not; back after two answers in a row', async () => {
    const { log, msgs } = logged();
    let mode: 'ok' | 'kept' | 'fresh' = 'fresh';
    health = new Health({ log }).register(
      'redis',
      async () => {
        if (mode !== 'ok') throw keptFailed(new Error(`${mode} failed`), mode === 'kept');
      },
      { everyMs: 150, timeoutMs: 100 },
    );
    health.start();
    await pause(40); // one failed fresh connect (a busy machine): still up
    expect(health.isUp('redis')).toBe(true);
    mode = 'ok';
    await pause(400);
    expect(health.isUp('redis')).toBe(true);
    mode = 'kept';
    await pause(200);
    expect(health.isUp('redis')).toBe(false);
    expect(health.snapshot()).toMatchObject({ ok: false, reasons: ['redis: kept failed'] });
    mode = 'ok';
    await pause(600);
    expect(health.isUp('redis')).toBe(true);
    expect(msgs().filter((m) => m.startsWith('dependency redis'))).toEqual(['dependency redis went away: kept failed', expect.stringMatching(/^dependency redis back after \d+\.\d s$/)]);
  });

  it("a timed-out call of the work is away at once, and back only after the checks answered without another; the work's failures meanwhile are counted, not logged", async () => {
    const { log, msgs, lines } = logged();
    health = new Health({ log }).register('mariadb', async () => {}, { everyMs: 150, timeoutMs: 100 });
    health.start();
    await pause(20);
    health.report('mariadb', new Error('mariadb query did not answer within 5000 ms'));
    expect(health.isUp('mariadb')).toBe(false);
    for (let i = 0; i < 5; i++) expect(health.quiet('intake-round', new Error('scan timed out'), 'intake round failed', ['mariadb', 'postgres'])).toBe(false);
    await pause(600);
    expect(health.isUp('mariadb')).toBe(true);
    const back = lines.find((l) => l.msg.startsWith('dependency mariadb back')) as unknown as { failuresCounted: number };
    expect(back.failuresCounted).toBe(6); // the report and the five quiet failures
    expect(msgs().filter((m) => m.includes('intake round failed'))).toEqual([]);
  });

  it('a failure of the work with its dependencies up: logged once, then at most once a minute per kind', () => {
    const { log, msgs } = logged();
    health = new Health({ log, summaryEveryMs: 60_000 });
    expect(health.quiet('k', new Error('boom'), 'round failed')).toBe(true);
    for (let i = 0; i < 10; i++) expect(health.quiet('k', new Error('boom'), 'round failed')).toBe(false);
    expect(health.quiet('other', new Error('x'), 'another kind')).toBe(true);
    expect(msgs()).toEqual(['round failed', 'another kind']);
  });
});
