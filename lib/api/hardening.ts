// What the api adds to the process's HTTP server (lib/runtime/http.ts):
//   - security headers on every answer (@fastify/helmet): a Content-Security-Policy without
//     inline script or style (an inline script of the console page would be allowed by its hash;
//     today it has none: /ops/js/*.js and /ops/console.css), connections to the api itself and the
//     identity provider only, frame-ancestors 'none',
//     X-Content-Type-Options: nosniff, no referrer; Cache-Control: no-store (operational data);
//   - the parameter rules of every route (schema.ts strictParameters, applied as each route is
//     declared): a query schema that refuses unknown keys, integer parameters in decimal digits;
//   - the OpenAPI 3 document of every route, from the route schemas (@fastify/swagger), at
//     GET /openapi.json, built at its first request on a scratch server holding the same routes
//     (swagger and its YAML writer stay unloaded until someone asks). Response schemas are
//     documentation and contract (the OpenAPI test validates real answers against them); answers
//     are serialised with JSON.stringify, so a response schema never changes or drops what a
//     route returns.
import helmet from '@fastify/helmet';
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { Logger } from '../runtime/log.ts';
import { needOf } from '../access/routes.ts';
import { anyObject, bearer, errors, strictParameters } from './schema.ts';

export async function hardenApi(app: FastifyInstance, o: { scriptSources: string[]; connectSources: string[]; log: Logger }): Promise<void> {
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: o.scriptSources,
        styleSrc: ["'self'"], // the console's style sheet is served (/ops/console.css); no inline style
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'", ...o.connectSources], // the identity provider's token endpoint (the console's sign-in)
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    frameguard: { action: 'deny' },
    strictTransportSecurity: false, // plain HTTP on loopback; TLS is the reverse proxy's
    referrerPolicy: { policy: 'no-referrer' },
  });
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('cache-control', 'no-store');
    return payload;
  });
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  // the routes of the OpenAPI document: read at its first request, once every onRoute hook has run
  const routes: RouteOptions[] = [];
  const unschematised: string[] = [];
  app.addHook('onRoute', (route) => {
    if (route.method === 'HEAD' || route.schema?.hide) return;
    if (!route.schema) unschematised.push(`${route.method} ${route.url}`);
    routes.push(route);
  });
  app.addHook('onRoute', strictParameters); // every route: a strict query schema, decimal integers (schema.ts)
  app.addHook('onReady', async () => {
    if (unschematised.length) o.log.warn({ routes: unschematised }, 'routes without a schema: not validated, missing from /openapi.json');
  });

  let doc: Promise<OpenApi> | undefined;
  app.get('/openapi.json', { schema: { hide: true } }, () => {
    doc ??= openApiOf(routes).catch((e: unknown) => {
      doc = undefined; // the next request tries again
      throw e;
    });
    return doc;
  });
}

/** The OpenAPI document of these routes: @fastify/swagger on a scratch server (no validators compiled), then closed. */
async function openApiOf(routes: RouteOptions[]): Promise<OpenApi> {
  const [{ default: Fastify }, { default: swagger }] = await Promise.all([import('fastify'), import('@fastify/swagger')]);
  const scratch = Fastify();
  scratch.setValidatorCompiler(() => () => true);
  scratch.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await scratch.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'msgexchange api',
        version: process.env.npm_package_version ?? '0.1.0',
        description:
          'The api process of msgexchange. Errors are {error, reason}. Routes need `Authorization: Bearer <JWT of the identity provider, or API key>` with the role lib/access/routes.ts names (401 without, 403 with too low a role).',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
  });
  for (const r of routes) scratch.route({ method: r.method, url: r.url, schema: withAccess(r), exposeHeadRoute: false, handler: async () => null });
  try {
    await scratch.ready();
    return withProcessRoutes(scratch.swagger() as OpenApi);
  } finally {
    await scratch.close();
  }
}

type OpenApi = { paths?: Record<string, unknown> } & Record<string, unknown>;

/** A route that needs a role (lib/access/routes.ts): `security: bearer` and the gate's answers (401, 403, 429, 503) in its document. */
function withAccess(r: RouteOptions): RouteOptions['schema'] {
  const need = [r.method].flat().map((m) => needOf(m, r.url))[0];
  if (need === undefined || need === 'public') return r.schema;
  const response = (r.schema?.response ?? {}) as Record<string, unknown>;
  return { ...r.schema, security: bearer, response: { ...errors(401, 403, 429, 503), ...response } };
}

/** /healthz and /metrics are registered by every process before the api's plugins: add them by hand. */
function withProcessRoutes(doc: OpenApi): OpenApi {
  const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });
  return {
    ...doc,
    paths: {
      ...doc.paths,
      '/healthz': {
        get: {
          summary: 'Readiness: ok and the names of the conditions; their reasons for a viewer',
          responses: {
            200: { description: 'healthy', ...json({ ...anyObject, required: ['ok', 'process'], properties: { ok: { type: 'boolean' }, process: { type: 'string' } } }) },
            503: { description: 'unhealthy', ...json(anyObject) },
            400: { description: 'unexpected Host header', ...json(errors(400)[400]) },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics (text exposition format), for a viewer',
          security: bearer,
          responses: {
            200: { description: 'metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
            400: { description: 'unexpected Host header', ...json(errors(400)[400]) },
            ...Object.fromEntries(Object.entries(errors(401, 403, 429)).map(([k, v]) => [k, { description: 'refused', ...json(v) }])),
          },
        },
      },
    },
  };
}
