// The ops console: one page (lib/api/console.html) and its script (lib/api/console.js, no
// inline script) served by the api process, and the summary JSON it reads. The page is static;
// every piece of data and every action goes through the bearer-token routes (/ops/summary here,
// the trace, timeline, counts, lists and charts of lib/api/trace-routes.ts, and the actions the
// CLIs mirror: /ops/replay, /ops/backfill-resume, /ops/dispatch-replay).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/postgres.ts';
import { pgOne, pgRows } from '../db/statement.ts';
import * as ConsoleSql from '../sql/console.ts';
import type { Guard } from './auth.ts';
import { anyObject, bearer, clientErrors, errors } from './schema.ts';

const PAGE = readFileSync(new URL('./console.html', import.meta.url), 'utf8');
// The page's script and style sheet, served apart so the page needs no inline script or style (Content-Security-Policy).
const SCRIPT = readFileSync(new URL('./console.js', import.meta.url), 'utf8');
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
      const head = await pgOne(tx, ConsoleSql.head);
      const counts = await pgRows(tx, ConsoleSql.countsByState);
      const problems = await pgRows(tx, ConsoleSql.recentProblems, RECENT);
      const abandoned = await pgRows(tx, ConsoleSql.abandonedBackfills, RECENT);
      const pendingBackfill = await pgOne(tx, ConsoleSql.backfillPending);
      const deadLetters = await pgRows(tx, ConsoleSql.deadLetters, RECENT);
      const dispatchPending = await pgRows(tx, ConsoleSql.outboxPendingByTarget);
      const requests = await pgRows(tx, ConsoleSql.openRequests);
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

export async function consoleRoutes(app: FastifyInstance, o: { db: Db; clock: Clock; guard: Guard }) {
  clientErrors(app);
  app.get(
    '/ops',
    { schema: { summary: 'The ops console (HTML page; give it the token)', response: { 200: { description: 'the page', content: { 'text/html': { schema: { type: 'string' } } } } } } },
    async (_req, reply) => reply.type('text/html; charset=utf-8').send(PAGE),
  );
  // the page's script and style: no token (like the page itself), no data
  app.get(
    '/ops/console.js',
    { schema: { summary: "The console's script", response: { 200: { description: 'JavaScript', content: { 'text/javascript': { schema: { type: 'string' } } } } } } },
    async (_req, reply) => reply.type('text/javascript; charset=utf-8').send(SCRIPT),
  );
  app.get(
    '/ops/console.css',
    { schema: { summary: "The console's style sheet", response: { 200: { description: 'CSS', content: { 'text/css': { schema: { type: 'string' } } } } } } },
    async (_req, reply) => reply.type('text/css; charset=utf-8').send(STYLE),
  );
  app.get(
    '/ops/summary',
    { onRequest: o.guard, schema: { summary: 'Everything the console shows, in one consistent read', security: bearer, response: { 200: summarySchema, ...errors(401, 429, 500) } } },
    async () => opsSummary(o.db, o.clock),
  );
}

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
