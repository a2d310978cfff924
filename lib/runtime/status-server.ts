// The HTTP server of a process without routes of its own (every process but the api): GET (and
// HEAD) /metrics and /healthz on node:http, with the limits and the access gate of
// lib/runtime/http.ts (lib/access/gate.ts: Host and Origin allowlist, /metrics for a viewer) but
// without fastify, which such a process would load only for these two routes (its resident
// memory: docs/decisions.md "Footprint"). The api keeps lib/runtime/http.ts.
import { createServer, type Server } from 'node:http';
import type { Slices } from '../core/config.ts';
import type { Gate } from '../access/gate.ts';
import type { Caller } from '../access/identity.ts';
import { needOf } from '../access/routes.ts';
import type { Logger } from './log.ts';

/** What a route answers: a status, a content type and a body (an object is sent as JSON). */
export interface StatusAnswer {
  status?: number;
  type?: string;
  body: string | object;
}
/** A route of the status server: the caller is what the gate let through (its principal; whether /healthz shows reasons). */
export type StatusRoute = (caller: Caller) => Promise<StatusAnswer>;

export interface StatusServer {
  listen(o: { port: number; host: string }): Promise<void>;
  close(): Promise<void>;
}

export function createStatusServer(http: Slices['http'], log: Logger, gate: Gate, routes: Record<string, StatusRoute>): StatusServer {
  for (const path of Object.keys(routes)) if (needOf('GET', path) === undefined) throw new Error(`GET ${path} is not in the route table of lib/access/routes.ts`);
  const server: Server = createServer(
    { requestTimeout: http.requestTimeoutMs, headersTimeout: Math.min(http.headersTimeoutMs, http.requestTimeoutMs), keepAliveTimeout: http.keepAliveTimeoutMs, connectionsCheckingInterval: 1000 },
    (req, res) => {
      const send = (a: StatusAnswer) => {
        const text = typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
        res.writeHead(a.status ?? 200, { 'content-type': a.type ?? 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      const path = (req.url ?? '/').split('?')[0];
      const route = req.method === 'GET' || req.method === 'HEAD' ? routes[path] : undefined;
      const h = req.headers;
      gate
        .check({ method: req.method ?? 'GET', route: route ? path : undefined, host: h.host, origin: h.origin, authorization: h.authorization, ip: req.socket.remoteAddress ?? '', requestId: null })
        .then(async (a) => {
          if (!a.allow) {
            for (const [k, v] of Object.entries(a.headers)) res.setHeader(k, v);
            return send({ status: a.status, body: a.body });
          }
          if (!route) return send({ status: 404, body: { error: 'not-found', reason: `no route ${req.method} ${path}` } });
          return send(await route({ principal: a.principal, details: a.details }));
        })
        .catch((err: unknown) => {
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

/** Why a server could not listen, by the error's code (anything else is a bug, thrown). */
const LISTEN_REFUSED: Record<string, string> = {
  EADDRINUSE: 'is in use (another npm start, or another program)',
  EACCES: 'may not be listened on by this user',
  EADDRNOTAVAIL: 'is no address of this machine',
};

/** Listens; a port taken or refused is the operator's to change: one line naming the setting (log and stderr), exit 1, no stack. */
export async function listenOrExit(app: Pick<StatusServer, 'listen'>, o: { port: number; host: string; setting: string; name: string; log: Logger }): Promise<void> {
  try {
    await app.listen({ port: o.port, host: o.host });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    const why = LISTEN_REFUSED[code];
    if (!why) throw e;
    const line = `${o.host}:${o.port} ${why}: set ${o.setting} (or MSGX_HTTP_HOST)`;
    o.log.fatal({ port: o.port, host: o.host, code }, line);
    process.stderr.write(`${o.name}: ${line}\n`);
    process.exit(1);
  }
}
