// The api's operator actions in the audit trail (lib/access/trail.ts: a row in ACCESS_AUDIT and a
// JSON log line naming the person, their role, the route, the IDs touched and the outcome). A
// route takes part by naming its action in its config: `config: { audit: 'replay' }`; its body
// (POST) or query (GET) is the selection, and the handler adds what it did with
// auditResult(req, {...}) and the IDs it touched with auditTouched(req, {msgIds: [...]}). The
// record is written once the answer is sent, so failed actions (400, 500) are in the trail too;
// refusals by the access gate are recorded by the gate (bounded per caller).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { callerOf } from '../access/identity.ts';
import type { AuditTrail } from '../access/trail.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The operator action this route performs, for the audit trail. */
    audit?: string;
  }
}

const RESULTS = new WeakMap<FastifyRequest, Record<string, unknown>>();
const TOUCHED = new WeakMap<FastifyRequest, Record<string, unknown[]>>();

/** Add to the audit record's result of this request (e.g. how many messages were replayed). */
export function auditResult(req: FastifyRequest, result: Record<string, unknown>): void {
  RESULTS.set(req, { ...RESULTS.get(req), ...result });
}

/** The IDs this request's action touched: {msgIds}, {eventIds}, {requestIds}. */
export function auditTouched(req: FastifyRequest, touched: Record<string, unknown[]>): void {
  TOUCHED.set(req, { ...TOUCHED.get(req), ...touched });
}

/** Records every route with `config.audit`, once its answer is sent (the gate's refusals are its own). */
export function auditRoutes(app: FastifyInstance, trail: AuditTrail): void {
  app.addHook('onResponse', async (req, reply) => {
    const action = req.routeOptions.config?.audit;
    const caller = callerOf(req);
    if (!action || !caller) return; // refused by the gate: recorded there
    const body = req.body;
    const selection = req.method === 'GET' ? req.query : Buffer.isBuffer(body) ? null : body; // a raw body (XML): the route audits its size and envelope
    const status = reply.statusCode;
    trail.record({
      requestId: req.id,
      principal: caller.principal,
      ip: req.ip,
      method: req.method,
      route: req.routeOptions.url ?? req.url.split('?')[0],
      action,
      status,
      outcome: status < 400 ? 'done' : 'failed',
      touched: TOUCHED.get(req) ?? null,
      selection: selection ?? null,
      result: { ...RESULTS.get(req) },
    });
  });
}
