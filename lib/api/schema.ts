// Shared pieces of the api's route schemas (Fastify JSON schema → request validation, and the
// same schemas → GET /openapi.json). Every parameter of every route gets a type, a range or an
// enum, and no string may carry U+0000 (Postgres text cannot, and it is never meaningful here).
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';

/** Body limit of the JSON admin routes (a selection of 10,000 ids fits); the inbox route has its own. */
export const JSON_BODY_LIMIT = 256 * 1024;

/** A string without NUL (and, by default, without other C0 controls). */
export const str = (o: { minLength?: number; maxLength: number; pattern?: string; description?: string }) => ({
  type: 'string' as const,
  minLength: o.minLength ?? 0,
  maxLength: o.maxLength,
  pattern: o.pattern ?? '^[^\\u0000-\\u001f]*$',
  ...(o.description ? { description: o.description } : {}),
});

/** A database id (bigint column): a positive integer JavaScript represents exactly. */
export const dbId = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;
export const dbIds = { type: 'array', items: dbId, minItems: 1, maxItems: 10_000 } as const;
/** A FLID as the SIS sends it: decimal digits. */
export const flid = str({ minLength: 1, maxLength: 30, pattern: '^[0-9]+$', description: 'flight id (FLID), decimal' });
export const boolText = { type: 'string', enum: ['true', 'false', '1', '0', ''] } as const;

/** The error answer of every route: {error, reason}; 500s add the request id of the log line. */
export const errorBody = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string' }, reason: { type: 'string' }, requestId: { type: 'string' } },
  additionalProperties: true,
} as const;

/** Response schemas: documentation and contract test only (the api serialises with JSON.stringify). */
export const anyObject = { type: 'object', additionalProperties: true } as const;
export const errors = (...codes: number[]): Record<number, typeof errorBody> => Object.fromEntries(codes.map((c) => [c, errorBody]));
export const bearer = [{ bearer: [] }];
/** A route's `response` map (typed loosely, so that handlers may answer any documented status). */
export const responses = (r: Record<number, unknown>): Record<number, unknown> => r;

/** The query of a route that takes none: any key is refused (400), not ignored. */
export const noQuery = { type: 'object', additionalProperties: false, properties: {} } as const;

type ObjectSchema = { type?: string; properties?: Record<string, { type?: unknown }>; additionalProperties?: unknown };
const DECIMAL = /^-?[0-9]{1,16}$/;
const CHECKS = new WeakSet<object>();

/**
 * The parameter rules every api route follows, applied where the route is declared (the api's
 * onRoute hook, lib/api/hardening.ts), so that no route can forget them:
 *   - a query schema that refuses unknown keys: a route without one gets `noQuery`, a query
 *     schema that does not say otherwise gets `additionalProperties: false`;
 *   - an integer parameter (path or query) is decimal digits. The validator's type coercion
 *     would turn "1e400", "Infinity" or "0x10" into numbers, and an infinite number passes
 *     `type: integer` and skips `minimum`/`maximum` (they only apply to finite numbers): it
 *     reached Postgres as "Infinity" (500). The raw text is checked before validation: 400
 *     "<querystring|params>/<name> must be a decimal integer".
 */
export function strictParameters(route: RouteOptions): void {
  const schema = (route.schema ??= {}) as { querystring?: ObjectSchema; params?: ObjectSchema };
  const q = schema.querystring;
  if (!q) schema.querystring = noQuery;
  else if (q.additionalProperties === undefined) schema.querystring = { ...q, additionalProperties: false };
  const ints = (['querystring', 'params'] as const).flatMap((where) =>
    Object.entries(schema[where]?.properties ?? {})
      .filter(([, p]) => p.type === 'integer')
      .map(([name]) => [where, name] as const),
  );
  if (ints.length === 0) return;
  const hooks = route.preValidation === undefined ? [] : Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation];
  if (hooks.some((h) => CHECKS.has(h))) return;
  const decimalIntegers = async (req: FastifyRequest, reply: FastifyReply) => {
    for (const [where, name] of ints) {
      const v = (where === 'querystring' ? req.query : req.params) as Record<string, unknown> | undefined;
      const raw = v?.[name];
      if (typeof raw === 'string' && !DECIMAL.test(raw)) return reply.code(400).send({ error: 'bad-request', reason: `${where}/${name} must be a decimal integer` });
    }
  };
  CHECKS.add(decimalIntegers);
  route.preValidation = [...hooks, decimalIntegers] as RouteOptions['preValidation'];
}

const NAMES: Record<number, string> = {
  400: 'bad-request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not-found',
  405: 'method-not-allowed',
  408: 'timeout',
  413: 'too-large',
  415: 'unsupported-media-type',
  429: 'too-many-requests',
};

/** The reason of a client error: the validation message, or the body limit that was exceeded. */
export function clientReason(err: Error & { code?: string }, bodyLimit: number | undefined): string {
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return `body exceeds the limit of this route (${bodyLimit} bytes)`;
  return err.message;
}

const HANDLED = new WeakSet<FastifyInstance>();

/**
 * Client errors (schema violations, unparsable or oversize bodies) as {error, reason}; anything
 * else goes on to the parent handler (the process's, which logs it with the request id and
 * answers without internal text). Call it at the top of every route plugin.
 */
export function clientErrors(app: FastifyInstance, special?: (err: Error & { code?: string }) => { status: number; body: unknown } | undefined): void {
  if (HANDLED.has(app)) return; // two route files registered in one scope
  HANDLED.add(app);
  app.setErrorHandler((err: Error, req, reply) => {
    const own = special?.(err as Error & { code?: string });
    if (own) return reply.code(own.status).send(own.body);
    const status = (err as { statusCode?: number }).statusCode ?? 500;
    if (status < 400 || status >= 500) throw err;
    return reply.code(status).send({ error: NAMES[status] ?? 'bad-request', reason: clientReason(err, req.routeOptions.bodyLimit) });
  });
}
