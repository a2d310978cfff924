// The HTTP server every process runs (/metrics, /healthz; the api adds its routes), hardened
// (issue 15): small default body limit (routes that need more say so), request and header
// timeouts, request ids, strict validation, Host check against DNS rebinding, and one error
// handler that logs every 500 with its request id and never answers internal text.
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Slices } from '../core/config.ts';
import type { Logger } from './log.ts';

/** Default body limit; a route that takes more sets its own `bodyLimit`. */
export const DEFAULT_BODY_LIMIT = 64 * 1024;

const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]', 'localhost']);

export function createHttpServer(http: Slices['http'], log: Logger): FastifyInstance {
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

  // DNS rebinding: a page on attacker.example that resolves to 127.0.0.1 reaches a loopback
  // server with `Host: attacker.example`. Bound to loopback, only loopback names are served.
  if (LOOPBACK.has(http.host)) {
    app.addHook('onRequest', async (req, reply) => {
      const host = req.headers.host;
      if (host === undefined) return;
      const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
      if (!LOOPBACK.has(name.toLowerCase()))
        return reply
          .code(400)
          .header('connection', 'close')
          .send({ error: 'bad-host', reason: `unexpected Host header: this server is bound to ${http.host} and answers only 127.0.0.1, localhost or [::1]` });
    });
  }

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
