// The HTTP server of a process without routes of its own (every process but the api): GET (and
// HEAD) /metrics and /healthz on node:http, with the limits and the Host check of
// lib/runtime/http.ts but without fastify, which such a process would load only for these two
// routes (its resident memory: docs/decisions.md "Footprint"). The api keeps lib/runtime/http.ts.
import { createServer, type Server } from 'node:http';
import type { Slices } from '../core/config.ts';
import type { Logger } from './log.ts';

/** What a route answers: a status, a content type and a body (an object is sent as JSON). */
export interface StatusAnswer {
  status?: number;
  type?: string;
  body: string | object;
}
export type StatusRoute = () => Promise<StatusAnswer>;

const LOOPBACK = new Set(['127.0.0.1', '::1', '[::1]', 'localhost']);

export interface StatusServer {
  listen(o: { port: number; host: string }): Promise<void>;
  close(): Promise<void>;
}

export function createStatusServer(http: Slices['http'], log: Logger, routes: Record<string, StatusRoute>): StatusServer {
  const server: Server = createServer(
    { requestTimeout: http.requestTimeoutMs, headersTimeout: Math.min(http.headersTimeoutMs, http.requestTimeoutMs), keepAliveTimeout: http.keepAliveTimeoutMs, connectionsCheckingInterval: 1000 },
    (req, res) => {
      const send = (a: StatusAnswer) => {
        const text = typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
        res.writeHead(a.status ?? 200, { 'content-type': a.type ?? 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      // DNS rebinding (lib/runtime/http.ts): bound to loopback, only loopback names are served
      const host = req.headers.host;
      if (LOOPBACK.has(http.host) && host !== undefined) {
        const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
        if (!LOOPBACK.has(name.toLowerCase())) {
          res.setHeader('connection', 'close');
          return send({ status: 400, body: { error: 'bad-host', reason: `unexpected Host header: this server is bound to ${http.host} and answers only 127.0.0.1, localhost or [::1]` } });
        }
      }
      const path = (req.url ?? '/').split('?')[0];
      const route = req.method === 'GET' || req.method === 'HEAD' ? routes[path] : undefined;
      if (!route) return send({ status: 404, body: { error: 'not-found', reason: `no route ${req.method} ${path}` } });
      route().then(send, (err: unknown) => {
        log.error({ err, method: req.method, route: path }, 'request failed');
        send({ status: 500, body: { error: 'internal', reason: 'internal error; the log has the details' } });
      });
    },
  );
  server.maxConnections = http.maxConnections;
  return {
    listen: (o) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(o.port, o.host, () => {
          server.off('error', reject);
          resolve();
        });
      }),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
