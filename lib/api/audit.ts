// The audit trail: one structured JSON line per operator action and per
// rejected token, whatever msgx.log.level says (unless it is "silent"):
//   {"audit":true,"requestId":"…","who":"token:1a2b3c4d","action":"replay",
//    "selection":{"ids":[1041]},"result":{"status":200,"replayed":1},"msg":"audit replay"}
// A route takes part by naming its action in its config: `config: { audit: 'replay' }`; its
// body (POST) or query (GET) is the selection, and the handler may add to the result with
// auditResult(req, {...}). The line is written when the answer has been sent, so refused and
// failed actions (400, 500) are in the trail too.
// Refused requests (a wrong or missing token) are written through refusal(): at most one line
// per client address per minute, so that a flood of guesses cannot grow the log without bound;
// the refusals left out are counted, in `result.suppressed` of that address's next line, or in a
// line of their own ("audit auth suppressed") once the minute is over.
import { systemClock } from '../core/clock.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from '../runtime/log.ts';
import { whoOf } from './who.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The operator action this route performs, for the audit log. */
    audit?: string;
  }
}

export interface AuditLog {
  line(req: FastifyRequest, action: string, selection: unknown, result: Record<string, unknown>): void;
  /** A refused request of `key` (the client address): written at most once per key per minute. */
  refusal(req: FastifyRequest, key: string, action: string, selection: Record<string, unknown>, result: Record<string, unknown>): void;
  /** Writes the counts still held back and stops the timer. */
  close(): void;
}

/** One refusal line per key per window; at most MAX_KEYS keys held (more share one count). */
const REFUSAL_WINDOW_MS = 60_000;
const MAX_KEYS = 10_000;

const RESULTS = new WeakMap<FastifyRequest, Record<string, unknown>>();
/** Add to the audit line's result of this request (e.g. how many messages were replayed). */
export function auditResult(req: FastifyRequest, result: Record<string, unknown>): void {
  RESULTS.set(req, { ...RESULTS.get(req), ...result });
}

export function auditLog(log: Logger, o: { now?: () => number; windowMs?: number } = {}): AuditLog {
  const out = log.child({ audit: true }, { level: log.level === 'silent' ? 'silent' : 'info' });
  const now = o.now ?? (() => systemClock.now().getTime());
  const windowMs = o.windowMs ?? REFUSAL_WINDOW_MS;
  const held = new Map<string, { start: number; action: string; suppressed: number }>();
  const flush = (all: boolean) => {
    const t = now();
    for (const [key, h] of held) {
      if (!all && t - h.start < windowMs) continue;
      if (h.suppressed > 0) out.info({ requestId: null, who: null, action: h.action, selection: { ip: key }, result: { suppressed: h.suppressed } }, `audit ${h.action} suppressed`);
      held.delete(key);
    }
  };
  const timer = setInterval(() => flush(false), windowMs);
  timer.unref();
  return {
    line(req, action, selection, result) {
      out.info({ requestId: req.id, who: whoOf(req), action, selection, result }, `audit ${action}`);
    },
    refusal(req, key, action, selection, result) {
      const t = now();
      if (!held.has(key) && held.size >= MAX_KEYS) {
        flush(false);
        if (held.size >= MAX_KEYS) key = '(other addresses)';
      }
      const h = held.get(key);
      if (h && t - h.start < windowMs) {
        h.suppressed++;
        return;
      }
      const suppressed = h?.suppressed ?? 0;
      held.set(key, { start: t, action, suppressed: 0 });
      out.info({ requestId: req.id, who: whoOf(req), action, selection, result: suppressed ? { ...result, suppressed } : result }, `audit ${action}`);
    },
    close() {
      clearInterval(timer);
      flush(true);
    },
  };
}

/** Writes the line of every route with `config.audit`, once its answer is sent. */
export function auditRoutes(app: FastifyInstance, audit: AuditLog): void {
  app.addHook('onClose', async () => audit.close());
  app.addHook('onResponse', async (req, reply) => {
    const action = req.routeOptions.config?.audit;
    if (!action || reply.statusCode === 401 || reply.statusCode === 429) return; // refused tokens have their own line
    const body = req.body;
    const selection = req.method === 'GET' ? req.query : Buffer.isBuffer(body) ? null : body; // a raw body (XML): the route audits its size and envelope
    audit.line(req, action, selection ?? null, { status: reply.statusCode, ...RESULTS.get(req) });
  });
}
