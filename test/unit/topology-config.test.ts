// Pointing the gateway at production-like services (docs/operations.md "Production topology"),
// the parts without a server: a multi-host DATABASE_URL (libpq's host list with
// target_session_attrs=read-write) and Redis behind Sentinel, read once from the configuration.
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, targets } from '../../lib/core/config.ts';
import { splitPgHosts } from '../../lib/core/pg-url.ts';
import { isRegisteredSecret } from '../../lib/core/secrets.ts';
import { redisEndpoint } from '../../lib/db/redis.ts';

describe('a DATABASE_URL naming several hosts', () => {
  it('lists the hosts in order (5432 when a port is left out) and keeps the rest as a one-host URL', () => {
    expect(splitPgHosts('postgres://u:pw@db-a:5433,db-b,[::1]:6000/msgx?target_session_attrs=read-write&sslmode=verify-full')).toEqual({
      hosts: [
        { host: 'db-a', port: 5433 },
        { host: 'db-b', port: 5432 },
        { host: '::1', port: 6000 },
      ],
      url: 'postgres://u:pw@db-a:5433/msgx?sslmode=verify-full',
      problems: [],
    });
  });

  it('leaves an ordinary URL as it is', () => {
    const url = 'postgres://postgres@127.0.0.1:5432/msgx';
    expect(splitPgHosts(url)).toEqual({ hosts: [{ host: '127.0.0.1', port: 5432 }], url, problems: [] });
  });

  it.each([
    ['postgres://u@a:5432,b:5432/msgx?target_session_attrs=read-only', 'target_session_attrs=read-only, but the gateway writes'],
    ['postgres://u@a:5432,b:99999/msgx', 'cannot read its host list'],
    ['postgres://u@a:5432,/msgx', 'cannot read its host list'],
  ])('%s is refused at start', (url, problem) => {
    expect(() => loadConfig({ DATABASE_URL: url })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_URL: url })).toThrow(problem);
  });

  it('resolves to a target with every host; the password inside the list URL is still a registered secret', () => {
    const c = loadConfig({ DATABASE_URL: 'postgres://msgx:pw-topo-9@h1:5432,h2:5433/msgx?target_session_attrs=read-write', MSGX_ALLOW_PLAINTEXT: 'postgres' });
    expect(targets(c).postgres).toEqual({
      service: 'postgres',
      url: 'postgres://msgx:pw-topo-9@h1:5432/msgx',
      hosts: [
        { host: 'h1', port: 5432 },
        { host: 'h2', port: 5433 },
      ],
    });
    expect(isRegisteredSecret('pw-topo-9')).toBe(true);
  });
});

describe('Redis behind Sentinel', () => {
  it('REDIS_SENTINELS + REDIS_SENTINEL_MASTER become ioredis Sentinel options; the URL keeps the database and credentials', () => {
    const c = loadConfig({
      REDIS_URL: 'redis://127.0.0.1:6379/3',
      REDIS_SENTINELS: 's1:26379, s2:26380',
      REDIS_SENTINEL_MASTER: 'msgx-redis',
      REDIS_PASSWORD: 'pw-sent-1',
      MSGX_ALLOW_PLAINTEXT: 'redis',
    });
    expect(redisEndpoint(targets(c).redis)).toEqual({
      url: 'redis://127.0.0.1:6379/3',
      options: {
        password: 'pw-sent-1',
        sentinels: [
          { host: 's1', port: 26379 },
          { host: 's2', port: 26380 },
        ],
        name: 'msgx-redis',
        failoverDetector: true,
      },
    });
  });

  it('no REDIS_SENTINELS: the URL is the server, as before', () => {
    expect(redisEndpoint(targets(loadConfig({})).redis).options).toEqual({});
  });

  it.each([
    [{ REDIS_SENTINELS: 's1' }, 'REDIS_SENTINELS=s1: expected host:port'],
    [{ REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_MASTER: ' ' }, 'REDIS_SENTINEL_MASTER names the master'],
  ])('%o is refused at start', (env, problem) => {
    expect(() => loadConfig(env)).toThrow(problem);
  });
});
