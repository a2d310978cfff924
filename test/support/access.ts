// The access of a test's own in-process server (lib/access/open.ts), from a test configuration:
// development mode with the test token, every read opened (test/support/env.ts).
import type { Config } from '../../lib/core/config.ts';
import { slices } from '../../lib/core/config.ts';
import { systemClock } from '../../lib/core/clock.ts';
import { openAccess, type Access } from '../../lib/access/open.ts';
import { testConfig } from './env.ts';
import { silentLog } from './services.ts';

export function testAccess(config: Config = testConfig()): Access {
  const noop = () => {};
  return openAccess({ process: 'test', http: slices(config).http, oidc: slices(config).oidc, clock: systemClock, log: silentLog, count: { refusal: noop, keysRefused: noop, auditWriteFailed: noop } });
}
