// Pipeline handlers for reference data (23 TYPEs × DNLD/RESP/ADD/UPD/DEL), RSTA, SCHS and EROR.
// Each runs inside the pump's business transaction; no outbox events, no flight changes.
import type { HandlerContext, HandlerOutcome, HandlerRegistry } from '../domain/handlers.ts';
import { serialize } from '../sis/xml.ts';
import { payload } from '../sis/envelope.ts';
import { boundedLabel } from '../runtime/labels.ts';
import { completeRqrd, failByEror } from '../requests/responses.ts';
import { decodeRefMessage } from './decode.ts';
import { REF_CATEGORIES, REF_STYPS, REQUESTABLE_TYPES, RSTA_FIELDS, type RefCategory } from '../sis/refdata-keys.ts';
import { decodeRsta, deleteStatuses, upsertStatuses } from './rsta.ts';
import { decodeSchs } from './schs.ts';
import { deleteKeys, replaceCategory, replaceSeason, upsertRecords } from './store.ts';

const applied: HandlerOutcome = { outcome: 'applied' };

/** The STYPs an EROR may carry (metric labels): the request kinds, SCHD/NONE, the TYPEs we request. */
export const ERROR_STYPS: readonly string[] = ['RQRD', 'RQFD', 'SCHD', 'NONE', ...REQUESTABLE_TYPES];

/** Tag names the reference key tables know anywhere: an unknown tag's label is one of these or 'other'. */
const KNOWN_REF_TAGS: ReadonlySet<string> = new Set(['RECS', ...REF_CATEGORIES.flatMap((c) => [c.rtype, c.key, ...c.fields, ...c.repeated]), ...RSTA_FIELDS]);

/** RESP answers the open RQRD for its TYPE (always applied). */
async function answerRqrd(ctx: HandlerContext, rtype: string): Promise<void> {
  if (ctx.env.styp !== 'RESP') return;
  const id = await completeRqrd(ctx.tx, rtype, ctx.msgId, ctx.now);
  if (id !== undefined) ctx.log.info({ requestId: id, rtype }, 'RQRD answered');
}

export function refdataHandler(cat: RefCategory) {
  return async (ctx: HandlerContext): Promise<HandlerOutcome> => {
    const m = decodeRefMessage(ctx.env, cat);
    if (m.unknownTags.length) ctx.log.info({ unknownTags: m.unknownTags.slice(0, 20) }, 'tags the reference key table does not know (stored)');
    if (m.op === 'replace') await replaceCategory(ctx.tx, m.rtype, m.records, ctx.msgId, ctx.now);
    else if (m.op === 'upsert') await upsertRecords(ctx.tx, m.rtype, m.records, ctx.msgId, ctx.now);
    else
      await deleteKeys(
        ctx.tx,
        m.rtype,
        m.records.map((r) => r.rkey),
      );
    await answerRqrd(ctx, m.rtype);
    // counted by the caller after the commit (once per message); labels bounded
    const unknownTags = m.unknownTags.map((tag) => ({ type: m.rtype, styp: m.styp, tag: boundedLabel(tag, KNOWN_REF_TAGS) }));
    return unknownTags.length ? { outcome: 'applied', counts: { unknownTags } } : applied;
  };
}

export async function rstaHandler(ctx: HandlerContext): Promise<HandlerOutcome> {
  const updates = decodeRsta(ctx.env, ctx.airport.timezone);
  for (const u of updates)
    if (u.stat === 'D' && u.eddt && u.eddt.getTime() <= ctx.now.getTime())
      ctx.log.info({ rtyp: u.rtyp, rsid: u.rsid, eddt: u.eddt.toISOString() }, 'RSTA disabled window already expired: stored, the resource answers enabled');
  if (ctx.env.styp === 'DEL') await deleteStatuses(ctx.tx, updates);
  else await upsertStatuses(ctx.tx, updates, ctx.msgId, ctx.now);
  await answerRqrd(ctx, 'RSTA');
  return applied;
}

export async function schsHandler(ctx: HandlerContext): Promise<HandlerOutcome> {
  await replaceSeason(ctx.tx, decodeSchs(ctx.env), ctx.msgId, ctx.now);
  await answerRqrd(ctx, 'SCHS');
  return applied;
}

/** The EROR's text: the payload's text, or its XML when it has structure. */
export function erorText(ctx: Pick<HandlerContext, 'env'>): string {
  const body = payload(ctx.env);
  const text = body.length === 1 && body[0].children.length === 0 ? body[0].text : body.map(serialize).join('');
  return (text || '(empty EROR)').slice(0, 4000);
}

export async function erorHandler(ctx: HandlerContext): Promise<HandlerOutcome> {
  const req = await failByEror(ctx.tx, { styp: ctx.env.styp, errorText: erorText(ctx), msgId: ctx.msgId, now: ctx.now });
  if (!req) return { outcome: 'skipped', reason: 'no-open-request' };
  ctx.log.warn({ requestId: req.id, kind: req.kind, rtype: req.rtype, operationDay: req.operationDay }, 'request FAILED by EROR');
  return { outcome: 'applied', counts: { requestsFailed: [{ kind: req.kind }] } };
}

export function registerRefdataHandlers(registry: HandlerRegistry): HandlerRegistry {
  for (const cat of REF_CATEGORIES) {
    const h = refdataHandler(cat);
    for (const styp of Object.keys(REF_STYPS)) registry.register(cat.rtype, styp, h);
  }
  for (const styp of Object.keys(REF_STYPS)) registry.register('RSTA', styp, rstaHandler);
  registry.register('SCHS', 'DNLD', schsHandler);
  registry.register('SCHS', 'RESP', schsHandler);
  registry.register('EROR', '*', erorHandler);
  return registry;
}
