// lib/runtime/probe.ts against the real services, and through a fault proxy: each probe answers
// when the service does, fails within its deadline when the path is refused or black-holed, and
// probeUntilUp returns within one interval of the path coming back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { probes, probeUntilUp, type Check } from '../../lib/runtime/probe.ts';
import { FaultProxy } from '../support/fault-proxy.ts';
import { TEST_INBOX_URL, TEST_KAFKA, TEST_PG_URL, TEST_REDIS_URL } from '../support/env.ts';

const services: { name: string; url: string; port: number; probe: (address: string) => Check }[] = [
  { name: 'postgres', url: TEST_PG_URL, port: Number(new URL(TEST_PG_URL).port || 5432), probe: (u) => probes.postgres(u, 800) },
  { name: 'mysql', url: TEST_INBOX_URL, port: Number(new URL(TEST_INBOX_URL).port || 3306), probe: (u) => probes.mysql(u, 800) },
  { name: 'redis', url: TEST_REDIS_URL, port: Number(new URL(TEST_REDIS_URL).port || 6379), probe: (u) => probes.redis(u, 800) },
];

describe('service probes', () => {
  const proxies: FaultProxy[] = [];
  beforeAll(async () => {
    for (const s of services) proxies.push(await FaultProxy.start({ port: s.port }));
  });
  afterAll(async () => {
    for (const p of proxies) await p.close();
  });

  it('each probe answers against the real service (Kafka: a metadata request)', async () => {
    for (const s of services) await s.probe(s.url)();
    await probes.kafka(TEST_KAFKA.split(','), 2000)();
  });

  for (const [i, s] of services.entries()) {
    it(`${s.name}: fails within its deadline when refused or black-holed; probeUntilUp resumes within one interval of the path coming back`, async () => {
      const proxy = proxies[i];
      const check = s.probe(proxy.url(s.url));
      await check();
      for (const mode of ['refuse', 'blackhole'] as const) {
        await proxy.set(mode);
        const t = Date.now();
        await expect(check()).rejects.toThrow();
        expect(Date.now() - t).toBeLessThan(2000);
      }
      let failures = 0;
      const started = Date.now();
      setTimeout(() => void proxy.set('pass'), 1500);
      const up = await probeUntilUp(check, { intervalMs: 250, deadlineMs: 10_000, onFailure: (n) => (failures = n) });
      const tookMs = Date.now() - started;
      expect(up).toBe(true);
      expect(failures).toBeGreaterThan(0);
      expect(tookMs).toBeLessThan(1500 + 250 + 800 + 200); // restore + interval + one probe deadline + slack
    });
  }

  it('probeUntilUp gives up at its deadline or when its signal aborts', async () => {
    const never: Check = async () => {
      throw new Error('down');
    };
    const t = Date.now();
    expect(await probeUntilUp(never, { intervalMs: 100, deadlineMs: 450 })).toBe(false);
    expect(Date.now() - t).toBeLessThan(700);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 200);
    expect(await probeUntilUp(never, { intervalMs: 100, signal: ac.signal })).toBe(false);
  });
});
