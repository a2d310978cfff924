// GET /healthz (lib/runtime/status-routes.ts): ok and the names of what is not ready for anyone;
// the reasons only for a caller the gate allowed details, scrubbed like every log line (a
// password in a URL, also as ?password=).
import { afterEach, describe, expect, it } from 'vitest';
import { clearCondition, setCondition } from '../../../lib/runtime/conditions.ts';
import { Health } from '../../../lib/runtime/health.ts';
import { statusRoutes } from '../../../lib/runtime/status-routes.ts';
import { silentLog } from '../../support/services.ts';

afterEach(() => clearCondition('restore-check-pending'));

describe('/healthz', () => {
  it('anonymous: ok and the condition names only; a viewer: the reasons, scrubbed', async () => {
    setCondition('restore-check-pending', 'cannot read postgres://msgx@db.airport.example/msgx?sslmode=verify-full&password=hunter2-q and mysql://u:hunter3@aodb/x', new Date(0));
    const route = statusRoutes('pump', new Health({ log: silentLog }))['/healthz'];
    const open = await route({ principal: null, details: false });
    expect(open).toEqual({ status: 503, body: { ok: false, process: 'pump', conditions: ['restore-check-pending'] } });
    const full = await route({ principal: { via: 'key', subject: 'prometheus', name: null, role: 'viewer' }, details: true });
    const text = JSON.stringify(full.body);
    expect(text).toContain('restore-check-pending: cannot read postgres://msgx@db.airport.example/msgx?sslmode=verify-full&password=***');
    expect(text).not.toContain('hunter2-q');
    expect(text).not.toContain('hunter3');
  });
});
