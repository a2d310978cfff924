// The audit trail under retention (lib/lifecycle/access-audit.ts): rows older than
// msgx.audit.retention go, in batches, oldest first; newer ones stay; the retention run names the
// object and counts it (msgx_retention_deleted_total{object="access_audit"}).
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../lib/core/clock.ts';
import { purgeAccessAudit } from '../../lib/lifecycle/access-audit.ts';
import { retentionSettings, type RetentionDeps } from '../../lib/lifecycle/common.ts';
import { metrics } from '../../lib/runtime/metrics.ts';
import { testConfig } from '../support/env.ts';
import { openServices, silentLog, type TestServices } from '../support/services.ts';

let s: TestServices;
beforeAll(async () => {
  s = await openServices();
  await sql`truncate access_audit`.execute(s.db);
});
afterAll(async () => s?.close());

describe('ACCESS_AUDIT retention', () => {
  it('rows older than msgx.audit.retention are deleted in batches, the others kept', async () => {
    const clock = new ManualClock('2026-12-01T00:00:00Z');
    await sql`insert into access_audit (at, process, method, route, action, status, outcome, subject)
              select ${clock.now()}::timestamptz - make_interval(days => g), 'api', 'POST', '/ops/replay', 'replay', 200, 'done', 'who-' || g
              from generate_series(1, 12) g`.execute(s.db);
    const d: RetentionDeps = { db: s.db, inbox: s.inbox, redis: s.redis, clock, ...retentionSettings(testConfig({ 'msgx.audit.retention': '7d' })), log: silentLog };
    const before = (await metrics.retentionDeleted.get()).values.find((v) => v.labels.object === 'access_audit')?.value ?? 0;
    expect(await purgeAccessAudit(d, { batch: 2 })).toBe(5); // 8..12 days old
    const left = (await sql<{ subject: string }>`select subject from access_audit order by at desc`.execute(s.db)).rows.map((r) => r.subject);
    expect(left).toEqual(['who-1', 'who-2', 'who-3', 'who-4', 'who-5', 'who-6', 'who-7']);
    expect((await metrics.retentionDeleted.get()).values.find((v) => v.labels.object === 'access_audit')?.value).toBe(before + 5);
    expect(await purgeAccessAudit(d)).toBe(0);
  });
});
