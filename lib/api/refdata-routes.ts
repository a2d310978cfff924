// Reference data and resource status for admin-api (read-only):
//   GET /reference/:rtype          → {rtype, title, key, records:[{rkey, record, lastMsgId, updatedAt}]}
//   GET /reference/:rtype/:rkey    → one record; 404 unknown-rtype / not-found
//   GET /resources/status?type=GATE&at=<ISO instant> (at defaults to now) → status at that time
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/postgres.ts';
import { anyObject, clientErrors, errors, str } from './schema.ts';
import { systemClock, type Clock } from '../core/clock.ts';
import { refCategory, RSTA_RESOURCE_TYPES } from '../sis/refdata-keys.ts';
import { isResourceType, statusAt } from '../refdata/rsta.ts';
import { getRecord, listCategory } from '../refdata/store.ts';

export interface RefdataRoutesOptions {
  db: Db;
  clock?: Clock;
}

export async function refdataRoutes(app: FastifyInstance, opts: RefdataRoutesOptions): Promise<void> {
  const clock = opts.clock ?? systemClock;
  const category = (rtype: string) => refCategory(rtype);
  clientErrors(app);
  const rtype = str({ minLength: 1, maxLength: 8, pattern: '^[A-Za-z0-9]+$', description: 'reference data type, e.g. SLST (case-insensitive)' });
  const rkey = str({ minLength: 1, maxLength: 128, description: 'the record key (value of the category key field)' });
  const record = { type: 'object', required: ['rkey', 'record'], properties: { rkey: { type: 'string' }, record: anyObject }, additionalProperties: true } as const;
  const list = {
    summary: 'All records of one reference data category',
    params: { type: 'object', required: ['rtype'], properties: { rtype } },
    response: {
      200: {
        type: 'object',
        required: ['rtype', 'title', 'key', 'count', 'records'],
        properties: { rtype: { type: 'string' }, title: { type: 'string' }, key: { type: 'string' }, count: { type: 'integer' }, records: { type: 'array', items: record } },
        additionalProperties: false,
      },
      ...errors(400, 404, 500),
    },
  };
  const one = {
    summary: 'One reference data record',
    params: { type: 'object', required: ['rtype', 'rkey'], properties: { rtype, rkey } },
    response: { 200: record, ...errors(400, 404, 500) },
  };
  const status = {
    summary: 'Status of every resource of one type at an instant (RSTA)',
    querystring: {
      type: 'object',
      required: ['type'],
      additionalProperties: false,
      properties: {
        type: str({ minLength: 4, maxLength: 4, pattern: '^[A-Za-z]{4}$', description: RSTA_RESOURCE_TYPES.join(', ') + ' (case-insensitive)' }),
        at: str({ maxLength: 40, pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9]{2}:?[0-9]{2})?$', description: 'ISO 8601 instant; default now' }),
      },
    },
    response: {
      200: {
        type: 'object',
        required: ['type', 'at', 'resources'],
        properties: { type: { type: 'string' }, at: { type: 'string', format: 'date-time' }, resources: { type: 'array', items: anyObject } },
        additionalProperties: false,
      },
      ...errors(400, 500),
    },
  };

  app.get<{ Params: { rtype: string } }>('/reference/:rtype', { schema: list }, async (req, reply) => {
    const cat = category(req.params.rtype);
    if (!cat) return reply.code(404).send({ error: 'unknown-rtype', rtype: req.params.rtype });
    const rows = await listCategory(opts.db, cat.rtype);
    return { rtype: cat.rtype, title: cat.title, key: cat.key, count: rows.length, records: rows.map(({ rtype: _, ...r }) => r) };
  });

  app.get<{ Params: { rtype: string; rkey: string } }>('/reference/:rtype/:rkey', { schema: one }, async (req, reply) => {
    const cat = category(req.params.rtype);
    if (!cat) return reply.code(404).send({ error: 'unknown-rtype', rtype: req.params.rtype });
    const row = await getRecord(opts.db, cat.rtype, req.params.rkey);
    if (!row) return reply.code(404).send({ error: 'not-found', rtype: cat.rtype, rkey: req.params.rkey });
    return row;
  });

  app.get<{ Querystring: { type?: string; at?: string } }>('/resources/status', { schema: status }, async (req, reply) => {
    const type = (req.query.type ?? '').toUpperCase();
    if (!isResourceType(type)) return reply.code(400).send({ error: 'bad-request', reason: `type must be one of ${RSTA_RESOURCE_TYPES.join(', ')}` });
    const at = req.query.at === undefined ? clock.now() : new Date(req.query.at);
    if (Number.isNaN(at.getTime()) || (req.query.at !== undefined && !/^\d{4}-\d{2}-\d{2}T/.test(req.query.at)))
      return reply.code(400).send({ error: 'bad-request', reason: 'at must be an ISO 8601 instant, e.g. 2026-12-01T08:00:00Z' });
    const resources = await statusAt(opts.db, { type, at });
    return { type, at: at.toISOString(), resources };
  });
}
