// POST /cminmsgs/send (C-7): inject one SIS message through the same inbox path as the AODB
// adapter. It only inserts a CMINMSGS row; intake and the pump take it from there.
// Auth and media type are checked in onRequest, before the body is read; the body limit is the
// inbox column's (msgx.inbox.max-message-bytes); the envelope is checked off the event loop for
// big messages (envelope-check.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../core/clock.ts';
import type { Slices } from '../core/config.ts';
import type { Inbox } from '../db/mysql.ts';
import { insertInboxRow } from '../pipeline/inbox.ts';
import { withTimeout } from '../core/timeout.ts';
import { formatLocalDatetime } from '../sis/values.ts';
import { auditResult, auditTouched } from './audit.ts';
import { EnvelopeChecker } from './envelope-check.ts';
import { bearer, clientErrors, dbId, errors, responses } from './schema.ts';

export async function inboxRoutes(app: FastifyInstance, o: { inbox: Inbox; settings: Slices['inbox']; clock: Clock }) {
  const max = o.settings.maxMessageBytes;
  const checker = new EnvelopeChecker();
  app.addHook('onClose', () => checker.close());
  // Raw body for XML content types; size checked by fastify's bodyLimit (413) and again here.
  for (const ct of ['application/xml', 'text/xml']) {
    if (!app.hasContentTypeParser(ct)) app.addContentTypeParser(ct, { parseAs: 'buffer', bodyLimit: max }, (_req, body, done) => done(null, body));
  }
  const xmlOnly = async (req: FastifyRequest, reply: FastifyReply) => {
    const ct = String(req.headers['content-type'] ?? '')
      .split(';')[0]
      .trim()
      .toLowerCase();
    if (ct !== 'application/xml' && ct !== 'text/xml') return reply.code(415).send({ error: 'unsupported-media-type', reason: 'send the SIS XML as application/xml or text/xml' });
  };
  // Fastify refuses an oversize body before the route runs: answer in the route's own shape.
  clientErrors(app, (err) =>
    err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? { status: 413, body: { error: 'too-large', reason: `body exceeds msgx.inbox.max-message-bytes (${max} bytes)` } } : undefined,
  );
  app.post(
    '/cminmsgs/send',
    {
      onRequest: xmlOnly,
      bodyLimit: max,
      config: { audit: 'send' },
      schema: {
        summary: 'Insert one SIS XML message into the inbox (CMINMSGS)',
        description: `Body: one SIS message as application/xml or text/xml, at most msgx.inbox.max-message-bytes (${max}) bytes, UTF-8, well-formed, with a META envelope.`,
        security: bearer,
        response: responses({ 201: { type: 'object', required: ['id'], properties: { id: dbId }, additionalProperties: false }, ...errors(400, 401, 403, 413, 415, 429, 500, 503) }),
      },
    },
    async (req, reply) => {
      if (o.settings.readOnly) return reply.code(403).send({ error: 'read-only', reason: 'this instance never writes the inbox (msgx.inbox.read-only)' });
      const buf = req.body as Buffer;
      if (!buf || buf.length === 0) return reply.code(400).send({ error: 'empty', reason: 'empty body' });
      if (buf.length > max) return reply.code(413).send({ error: 'too-large', reason: `body is ${buf.length} bytes, limit ${max}` });
      auditResult(req, { bytes: buf.length });
      // A client that goes away cancels its check (queued or running).
      const gone = new AbortController();
      const onClose = () => !reply.raw.writableEnded && gone.abort();
      reply.raw.once('close', onClose);
      const checked = await checker.check(buf, gone.signal).finally(() => reply.raw.off('close', onClose));
      if (gone.signal.aborted) return reply.code(499).send({ error: 'client-gone', reason: 'the client closed the connection' });
      if (!checked.ok) return reply.code(checked.status).send({ error: checked.error, reason: checked.reason });
      const text = checked.text;
      const meta = checked.meta;
      const id = await withTimeout(
        o.settings.timeoutMs,
        'inbox insert',
        insertInboxRow(o.inbox, {
          body: text,
          received: formatLocalDatetime(o.clock.now(), o.settings.timezone),
          type: meta.type,
          styp: meta.styp,
          sndr: meta.sndr,
          seqn: Number(meta.seqn) <= 8_388_607 ? Number(meta.seqn) : null,
        }),
      );
      auditResult(req, { id, type: meta.type, styp: meta.styp, sndr: meta.sndr, seqn: meta.seqn });
      auditTouched(req, { msgIds: [id] });
      return reply.code(201).send({ id });
    },
  );
}
