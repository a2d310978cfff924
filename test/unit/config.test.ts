import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDuration, slices } from '../../lib/core/config.ts';

describe('config', () => {
  it('works with no configuration at all (local defaults)', () => {
    const c = loadConfig({});
    expect(c['msgx.pipeline.backoff']).toEqual([1000, 5000, 30_000, 120_000]);
    expect(c['msgx.pipeline.idle-poll']).toBe(200);
    expect(c['msgx.identity.include-day-boundary']).toBe(true);
    expect(c.DATABASE_URL).toBe('postgres://postgres@127.0.0.1:5432/msgx');
    expect(c['msgx.http.port.api']).toBe(8080);
  });

  it.each([
    [{ MSGX_PIPELINE_CLAIM_BATCH: 'many' }, 'msgx.pipeline.claim-batch (MSGX_PIPELINE_CLAIM_BATCH="many")'],
    [{ MSGX_PIPELINE_IDLE_POLL: '5 parsecs' }, 'msgx.pipeline.idle-poll'],
    [{ MSGX_AIRPORT_TIMEZONE: 'Mars/Olympus' }, 'not an IANA time zone'],
    [{ MSGX_AIRPORT_DAY_CUTOVER: '25:00' }, 'expected HH:MM'],
    [{ MSGX_INBOX_READ_ONLY: 'yes' }, 'msgx.inbox.read-only'],
    [{ MSGX_DISPATCH_RESEED_GAP: '2h' }, 'msgx.dispatch.reseed-gap (MSGX_DISPATCH_RESEED_GAP="2h"): expected a duration from 1s to 10m'],
    [{ MSGX_DISPATCH_RESEED_GAP: '500ms' }, 'expected a duration from 1s to 10m'],
    [{ DATABASE_URL: 'not a url' }, 'DATABASE_URL'],
    [{ MSGX_PIPELINE_MAX_ATTEMPTS: '3' }, 'msgx.pipeline.backoff has 4 entries but msgx.pipeline.max-attempts=3 needs exactly 2'],
    [{ MSGX_PIPELINE_OVERDUE_BACKFILL: '40d' }, 'msgx.pipeline.overdue-backfill (R) must not exceed msgx.pipeline.inbox-retention (R_keep)'],
  ])('%o stops start-up naming the key and why', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it("msgx.http.trust-proxy: off by default, the proxies' addresses when set, never 'believe everyone'", () => {
    expect(slices(loadConfig({})).http.trustProxy).toBe(false);
    expect(slices(loadConfig({ MSGX_HTTP_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8' })).http.trustProxy).toBe('127.0.0.1, 10.0.0.0/8');
    expect(() => loadConfig({ MSGX_HTTP_TRUST_PROXY: 'true' })).toThrow(/msgx\.http\.trust-proxy .*would believe X-Forwarded-For from anyone/);
    expect(() => loadConfig({ MSGX_HTTP_TRUST_PROXY: '127.0.0.1; rm' })).toThrow(/msgx\.http\.trust-proxy/);
    expect(slices(loadConfig({ MSGX_HTTP_MAX_CONNECTIONS: '64', MSGX_HTTP_REQUEST_TIMEOUT: '20s' })).http).toMatchObject({
      maxConnections: 64,
      requestTimeoutMs: 20_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5000,
    });
  });

  it('parses durations', () => {
    expect([parseDuration('200ms'), parseDuration('2s'), parseDuration('10m'), parseDuration('24h'), parseDuration('30d')]).toEqual([200, 2000, 600_000, 86_400_000, 2_592_000_000]);
    expect(() => parseDuration('soon')).toThrow('is not a duration');
  });

  it('a worker process with a bad value exits non-zero with the key in its message', async () => {
    const { spawnSync } = await import('node:child_process');
    const r = spawnSync(process.execPath, ['workers/pump.ts'], { env: { ...process.env, MSGX_PIPELINE_MAX_ATTEMPTS: '2' }, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('msgx.pipeline.backoff has 4 entries but msgx.pipeline.max-attempts=2 needs exactly 1');
  });
});

describe('msgx.airport.timezone', () => {
  // canonical names come from ICU's list; aliases outside it (UTC, Etc/GMT+8) still pass the
  // DateTimeFormat check, so the set of accepted names is what it was
  it.each(['Asia/Shanghai', 'Europe/Vienna', 'UTC', 'Etc/UTC', 'Etc/GMT+8', 'US/Eastern', 'Asia/Kolkata'])('accepts %s', (tz) => {
    expect(slices(loadConfig({ MSGX_AIRPORT_TIMEZONE: tz })).airport.timezone).toBe(tz);
  });
  it.each(['Mars/Olympus', 'Asia/Shangai', ''])('refuses %o', (tz) => {
    expect(() => loadConfig({ MSGX_AIRPORT_TIMEZONE: tz })).toThrow('msgx.airport.timezone');
  });
});

describe('configuration slices (a module receives the part it uses)', () => {
  it('each slice field carries the parsed value of its key, frozen, built once per config', () => {
    const c = loadConfig({ MSGX_PIPELINE_APPLY_BATCH: '50', MSGX_AIRPORT_TIMEZONE: 'Europe/Vienna', MSGX_PIPELINE_BACKOFF: '1s,2s,3s,4s', KAFKA_BROKERS: 'k1:9092', MSGX_ALLOW_PLAINTEXT: 'kafka' });
    const s = slices(c);
    expect(s.pump.applyBatch).toBe(50);
    expect(s.airport).toEqual({ timezone: 'Europe/Vienna', dayCutover: '00:00' });
    expect(s.failures.backoffMs).toEqual([1000, 2000, 3000, 4000]);
    expect(s.kafka.brokers).toBe('k1:9092');
    expect(s.io.timeoutMs).toBe(5000);
    expect(Object.isFrozen(s.pump)).toBe(true);
    expect(() => {
      (s.pump as { applyBatch: number }).applyBatch = 1;
    }).toThrow(TypeError);
    expect(slices(c)).toBe(s);
  });
});
