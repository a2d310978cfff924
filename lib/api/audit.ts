// The audit trail (issue 15 item 4): one structured JSON line per operator action and per
// rejected token, whatever msgx.log.level says (unless it is "silent"):
//   {"audit":true,"requestId":"…","who":"token:1a2b3c4d","action":"replay",
//    "selection":{"ids":[1041]},"result":{"status":200,"replayed":1},"msg":"audit replay"}
// A route takes part by naming its action in its config: `config: { audit: 'replay' }`; its
// body (POST) or query (GET) is the selection, and the handler may add to the result with
// auditResult(req, {...}). The line is written when the answer has been sent, so refused and
// failed actions (400, 500) are in the trail too.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from '../runtime/log.ts';
import { whoOf } from './auth.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The operator action this route performs, for the audit log. */
    audit?: string;
  }
}

export interface AuditLog {
  line(req: FastifyRequest, action: string, selection: unknown, result: Record<string, unknown>): void;
}

const RESULTS = new WeakMap<FastifyRequest, Record<string, unknown>>();
/** Add to the audit line's result of this request (e.g. how many messages were replayed). */
export function auditResult(req: FastifyRequest, result: Record<string, unknown>): void {
  RESULTS.set(req, { ...RESULTS.get(req), ...result });
}

export function auditLog(log: Logger): AuditLog {
  const out = log.child({ audit: true }, { level: log.level === 'silent' ? 'silent' : 'info' });
  return {
    line(req, action, selection, result) {
      out.info({ requestId: req.id, who: whoOf(req), action, selection, result }, `audit ${action}`);
    },
  };
}

/** Writes the line of every route with `config.audit`, once its answer is sent. */
export function auditRoutes(app: FastifyInstance, audit: AuditLog): void {
  app.addHook('onResponse', async (req, reply) => {
    const action = req.routeOptions.config?.audit;
    if (!action || reply.statusCode === 401 || reply.statusCode === 429) return; // refused tokens have their own line
    const body = req.body;
    const selection = req.method === 'GET' ? req.query : Buffer.isBuffer(body) ? null : body; // a raw body (XML): the route audits its size and envelope
    audit.line(req, action, selection ?? null, { status: reply.statusCode, ...RESULTS.get(req) });
  });
}
