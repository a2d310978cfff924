// The ops console: one page (lib/api/console.html), its ES modules (lib/api/console/*.js, served
// as they are, no bundler, no inline script) and style sheet, served by the api process; what it
// needs to sign in (GET /ops/config: the identity provider, the client id, the scopes), who is
// signed in (GET /ops/me: name, role, the routes the role may call) and the summary JSON it
// reads. The page is static; every piece of data and every action goes through the routes of the
// route table (lib/access/routes.ts), which the server enforces whatever the page offers.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../core/clock.ts';
import { withTimeout } from '../core/timeout.ts';
import type { Db } from '../db/postgres.ts';
import { callerOf } from '../access/identity.ts';
import type { Access } from '../access/open.ts';
import { routesFor } from '../access/routes.ts';
import * as ConsoleSql from '../sql/console.ts';
import { anyObject, bearer, clientErrors, errors, noQuery, responses, str } from './schema.ts';

const PAGE = readFileSync(new URL('./console.html', import.meta.url), 'utf8');
// The page's modules and style sheet, served apart so the page needs no inline script or style (Content-Security-Policy).
const MODULES = new Map(
  readdirSync(new URL('./console/', import.meta.url))
    .filter((f) => f.endsWith('.js'))
    .map((f) => [f, readFileSync(new URL(`./console/${f}`, import.meta.url), 'utf8')]),
);
const STYLE = readFileSync(new URL('./console.css', import.meta.url), 'utf8');

/**
 * The Content-Security-Policy `script-src` sources of the page: a SHA-256 hash of each inline
 * <script> (computed from the file, so editing the page needs no CSP change) and 'self' for
 * scripts served by the api. Inline event-handler attributes (onclick="…") are NOT allowed:
 * attach handlers from the script.
 */
export const CONSOLE_SCRIPT_SOURCES = [
  "'self'",
  ...[...PAGE.matchAll(/<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/g)].map((m) => `'sha256-${createHash('sha256').update(m[1], 'utf8').digest('base64')}'`),
];
const RECENT = 50;

/** Everything the console shows, in one consistent read. */
export async function opsSummary(db: Db, clock: Clock) {
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (tx) => {
      const now = clock.now();
      const head = await ConsoleSql.readHead(tx);
      const counts = await ConsoleSql.countByState(tx);
      const problems = await ConsoleSql.listRecentProblems(tx, RECENT);
      const abandoned = await ConsoleSql.listAbandonedBackfills(tx, RECENT);
      const pendingBackfill = await ConsoleSql.readBackfillPending(tx);
      const deadLetters = await ConsoleSql.listDeadLetters(tx, RECENT);
      const dispatchPending = await ConsoleSql.countOutboxPendingByTarget(tx);
      const requests = await ConsoleSql.listOpenRequests(tx);
      return {
        now: now.toISOString(),
        head: head ? { ...head, ageSeconds: Math.round((now.getTime() - new Date(head.enqueued_at).getTime()) / 1000) } : null,
        counts: Object.fromEntries(counts.map((r) => [r.state, r.n])),
        backfillPending: pendingBackfill!.n,
        recentProblems: problems,
        abandonedBackfills: abandoned,
        dispatchPending: Object.fromEntries(dispatchPending.map((r) => [r.target, r.n])),
        deadLetters,
        openRequests: requests,
      };
    });
}

export async function consoleRoutes(app: FastifyInstance, o: { db: Db; clock: Clock; access: Access; timeoutMs: number }) {
  clientErrors(app);
  const file = (type: string, description: string) => ({ 200: { description, content: { [type]: { schema: { type: 'string' } } } } });
  // the identity provider sends the person back here with the answer to the sign-in (read by the page, never by the server)
  const back = str({ maxLength: 4096 });
  const signInAnswer = { type: 'object', additionalProperties: false, properties: { code: back, state: back, iss: back, session_state: back, error: back, error_description: back } };
  app.get('/ops', { schema: { summary: 'The ops console (HTML page; it signs in)', querystring: signInAnswer, response: file('text/html', 'the page') } }, async (_req, reply) =>
    reply.type('text/html; charset=utf-8').send(PAGE),
  );
  // the page's modules and style: public (like the page itself), no data
  app.get(
    '/ops/js/:file',
    {
      schema: {
        summary: "The console's ES modules",
        params: { type: 'object', required: ['file'], additionalProperties: false, properties: { file: str({ maxLength: 40, pattern: '^[a-z][a-z-]*\\.js$' }) } },
        response: { ...file('text/javascript', 'JavaScript'), ...errors(400, 404) },
      },
    },
    async (req, reply) => {
      const text = MODULES.get((req.params as { file: string }).file);
      if (text === undefined) return reply.code(404).send({ error: 'not-found', reason: 'no such console module' });
      return reply.type('text/javascript; charset=utf-8').send(text);
    },
  );
  app.get('/ops/console.css', { schema: { summary: "The console's style sheet", response: file('text/css', 'CSS') } }, async (_req, reply) => reply.type('text/css; charset=utf-8').send(STYLE));
  app.get(
    '/ops/config',
    {
      schema: {
        summary: 'What the console needs to sign in: the identity provider, its client id and scopes; whether the shared development token is accepted',
        querystring: noQuery,
        response: responses({ 200: configSchema, ...errors(503) }),
      },
    },
    async (_req, reply) => {
      const c = o.access.console;
      let d: Awaited<ReturnType<Access['identity']['discovery']>>;
      try {
        d = await withTimeout(o.timeoutMs, 'identity provider discovery', o.access.identity.discovery());
      } catch (e) {
        return reply.code(503).send({ error: 'unavailable', reason: `the identity provider does not answer: ${(e as Error).message}` });
      }
      const oidc = d && {
        issuer: d.issuer,
        clientId: c.clientId,
        scopes: c.scopes,
        resource: c.resource || null,
        authorizationEndpoint: d.authorization_endpoint,
        tokenEndpoint: d.token_endpoint,
        endSessionEndpoint: d.end_session_endpoint ?? null,
      };
      return { tokenSignIn: c.tokenSignIn, oidc };
    },
  );
  app.get(
    '/ops/me',
    { schema: { summary: 'Who is signed in: subject, name, role and the routes the role may call', security: bearer, querystring: noQuery, response: { 200: meSchema, ...errors(401, 429) } } },
    async (req) => {
      const p = callerOf(req)?.principal ?? null;
      return { via: p?.via ?? null, subject: p?.subject ?? null, name: p?.name ?? null, role: p?.role ?? null, routes: routesFor(p?.role ?? null) };
    },
  );
  app.get('/ops/summary', { schema: { summary: 'Everything the console shows, in one consistent read', security: bearer, response: { 200: summarySchema, ...errors(401, 429, 500) } } }, async () =>
    opsSummary(o.db, o.clock),
  );
}

const configSchema = {
  type: 'object',
  required: ['tokenSignIn', 'oidc'],
  additionalProperties: false,
  properties: {
    tokenSignIn: { type: 'boolean', description: 'development mode: the shared token is accepted' },
    oidc: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          properties: {
            issuer: { type: 'string' },
            clientId: { type: 'string' },
            scopes: { type: 'string' },
            resource: { type: ['string', 'null'] },
            authorizationEndpoint: { type: 'string' },
            tokenEndpoint: { type: 'string' },
            endSessionEndpoint: { type: ['string', 'null'] },
          },
        },
      ],
    },
  },
} as const;
const meSchema = {
  type: 'object',
  required: ['via', 'subject', 'name', 'role', 'routes'],
  additionalProperties: false,
  properties: {
    via: { type: ['string', 'null'] },
    subject: { type: ['string', 'null'] },
    name: { type: ['string', 'null'] },
    role: { type: ['string', 'null'] },
    routes: { type: 'array', items: { type: 'string' } },
  },
} as const;
const rows = { type: 'array', items: anyObject } as const;
const summarySchema = {
  type: 'object',
  required: ['now', 'head', 'counts', 'backfillPending', 'recentProblems', 'abandonedBackfills', 'dispatchPending', 'deadLetters', 'openRequests'],
  properties: {
    now: { type: 'string', format: 'date-time' },
    head: { anyOf: [anyObject, { type: 'null' }] },
    counts: { type: 'object', additionalProperties: { type: 'integer' } },
    backfillPending: { type: 'integer' },
    recentProblems: rows,
    abandonedBackfills: rows,
    dispatchPending: { type: 'object', additionalProperties: { type: 'integer' } },
    deadLetters: rows,
    openRequests: rows,
  },
  additionalProperties: false,
} as const;
