// The HTTP server of the api (/metrics, /healthz and its routes), hardened: small default body
// limit (routes that need more say so), request and header timeouts, request ids, strict
// validation, the access gate (lib/access/gate.ts: Host and Origin allowlist against DNS
// rebinding, who is calling, the role the route needs) before any body is read, and one error
// handler that logs every 500 with its request id and never answers internal text.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Slices } from '../core/config.ts';
import type { Gate } from '../access/gate.ts';
import { setCaller } from '../access/identity.ts';
import { needOf } from '../access/routes.ts';
import type { Logger } from './log.ts';

/** Default body limit; a route that takes more sets its own `bodyLimit`. */
export const DEFAULT_BODY_LIMIT = 64 * 1024;

export function createHttpServer(http: Slices['http'], log: Logger, gate: Gate): FastifyInstance {
  const app = Fastify({
    logger: false,
    bodyLimit: DEFAULT_BODY_LIMIT,
    // The whole request (headers and body) within msgx.http.request-timeout (else 408), the
    // headers within msgx.http.headers-timeout; an idle kept-alive connection is closed after
    // msgx.http.keep-alive-timeout; at most msgx.http.max-connections open at once (more are
    // refused by the listening socket).
    requestTimeout: http.requestTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    http: { headersTimeout: Math.min(http.headersTimeoutMs, http.requestTimeoutMs), connectionsCheckingInterval: 1000 },
    // The client's address (req.ip) behind the reverse proxy: msgx.http.trust-proxy.
    trustProxy: http.trustProxy,
    genReqId: () => randomUUID(),
    // Reject what does not match a schema instead of silently dropping it.
    ajv: { customOptions: { removeAdditional: false } },
  });

  // Every route is in the access table (lib/access/routes.ts), or the server does not start.
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat())
      if (needOf(method, route.url) === undefined) throw new Error(`${method} ${route.url} is not in the route table of lib/access/routes.ts: give it the role it needs there`);
  });
  // Before the body is read: a refused request is answered and its connection closed.
  app.addHook('onRequest', async (req, reply) => {
    const a = await gate.check({
      method: req.method,
      route: req.routeOptions.url,
      host: req.headers.host,
      origin: req.headers.origin,
      authorization: req.headers.authorization,
      ip: req.ip,
      requestId: req.id,
    });
    if (!a.allow) return reply.code(a.status).headers(a.headers).send(a.body);
    setCaller(req, { principal: a.principal, details: a.details });
  });

  app.server.maxConnections = http.maxConnections;

  app.setErrorHandler((err: Error, req, reply) => {
    const status = (err as { statusCode?: number }).statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const reason = (err as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? `body exceeds the limit of this route (${req.routeOptions.bodyLimit} bytes)` : err.message;
      return reply.code(status).send({ error: status === 413 ? 'too-large' : status === 401 ? 'unauthorized' : 'bad-request', reason });
    }
    log.error({ err, requestId: req.id, method: req.method, route: req.routeOptions.url ?? null }, 'request failed');
    return reply.code(500).send({ error: 'internal', reason: 'internal error; the log has the details under this request id', requestId: req.id });
  });
  app.setNotFoundHandler((req, reply) => reply.code(404).send({ error: 'not-found', reason: `no route ${req.method} ${req.url.split('?')[0]}` }));
  return app;
}
