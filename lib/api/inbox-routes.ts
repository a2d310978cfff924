// POST /cminmsgs/send (C-7): inject one SIS message through the same inbox path as the AODB
// adapter. It only inserts a CMINMSGS row; intake and the pump take it from there.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import { insertInboxRow, withTimeout, type Inbox } from '../db/mysql.ts';
import { decodeEnvelope } from '../sis/envelope.ts';
import { PipelineError } from '../pipeline/errors.ts';
import { formatLocalDatetime } from '../sis/values.ts';

export async function inboxRoutes(app: FastifyInstance, o: { inbox: Inbox; config: Config; clock: Clock; guard: (req: never, reply: never) => Promise<unknown> }) {
  const max = o.config['msgx.inbox.max-message-bytes'];
  // Raw body for XML content types; size checked by fastify's bodyLimit (413) and again here.
  for (const ct of ['application/xml', 'text/xml']) {
    if (!app.hasContentTypeParser(ct)) app.addContentTypeParser(ct, { parseAs: 'buffer', bodyLimit: max }, (_req, body, done) => done(null, body));
  }
  const xmlOnly = async (req: FastifyRequest, reply: FastifyReply) => {
    const ct = String(req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (ct !== 'application/xml' && ct !== 'text/xml') return reply.code(415).send({ error: 'unsupported-media-type', reason: 'send the SIS XML as application/xml or text/xml' });
  };
  // Fastify refuses an oversize body before the route runs: answer in the route's own shape.
  app.setErrorHandler((err, _req, reply) => {
    if ((err as { code?: string }).code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return reply.code(413).send({ error: 'too-large', reason: `body exceeds msgx.inbox.max-message-bytes (${max} bytes)` });
    return reply.send(err);
  });
  // Auth and media type are checked before the body is read.
  app.post('/cminmsgs/send', { onRequest: [o.guard as never, xmlOnly], bodyLimit: max }, async (req, reply) => {
    if (o.config['msgx.inbox.read-only']) return reply.code(403).send({ error: 'read-only', reason: 'this instance never writes the inbox (msgx.inbox.read-only)' });
    const buf = req.body as Buffer;
    if (!buf || buf.length === 0) return reply.code(400).send({ error: 'empty', reason: 'empty body' });
    if (buf.length > max) return reply.code(413).send({ error: 'too-large', reason: `body is ${buf.length} bytes, limit ${max}` });
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
    } catch {
      return reply.code(400).send({ error: 'invalid-utf8', reason: 'body is not valid UTF-8 (the inbox column could not store it)' });
    }
    let meta: { type: string; styp: string; sndr: string; seqn: string };
    try {
      meta = decodeEnvelope(text);
    } catch (e) {
      if (e instanceof PipelineError) return reply.code(400).send({ error: e.failure.cls.toLowerCase(), reason: e.failure.detail });
      throw e;
    }
    const id = await withTimeout(
      o.config['msgx.io.timeout'],
      'inbox insert',
      insertInboxRow(o.inbox, {
        body: text,
        received: formatLocalDatetime(o.clock.now(), o.config['msgx.airport.timezone']),
        type: meta.type,
        styp: meta.styp,
        sndr: meta.sndr,
        seqn: Number(meta.seqn) <= 8_388_607 ? Number(meta.seqn) : null,
      }),
    );
    return reply.code(201).send({ id });
  });
}
