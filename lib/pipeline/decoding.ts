// The pump's decode step for one message, pure: raw body → envelope, kind, identity key, and the
// batch domain's command. The same function runs in the pump's decode worker
// (lib/pipeline/decoder.ts) and inline, so both give the same result; the pump turns it into
// the message's outcome (lib/pipeline/pump/batch.ts `prepare`).
import type { AirportConfig } from '../core/config.ts';
import { classify, type Failure } from '../core/errors.ts';
import type { DecodeHints, HandlerRegistry } from '../domain/handlers.ts';
import { decodeEnvelope, identityKey, kindOf, payload, type Envelope } from '../sis/envelope.ts';
import { expandAll } from '../sis/xml.ts';
import { PUMP } from '../core/tuning.ts';

export type Decoded =
  /** The envelope did not decode (MALFORMED/PROTOCOL: the message's outcome; anything else: retryable). */
  | { ok: false; failure: Failure }
  | {
      ok: true;
      /** The whole tree for a transaction handler; META only (no payload) for a batch domain or no entry. */
      env: Envelope;
      kind: string;
      flid?: string;
      /** INV-6 key (C-3) with the configured day boundary. */
      identity: string;
      /** What the decoding registry holds for TYPE/STYP. */
      entry: 'none' | 'tx' | 'batch';
      /** entry 'batch': the command, or the failure of the domain's decode. */
      cmd?: unknown;
      failure?: Failure;
      /** The command is a batch of its own (a snapshot): nothing after it is decoded in the same pass. */
      ownBatch?: boolean;
    };

/** A large message (PUMP.largeBody): a decode worker of its own, the memory given back after its batch. */
export const LARGE_BODY = PUMP.largeBody;

export interface DecodeSettings {
  airport: AirportConfig;
  includeDayBoundary: boolean;
}

/** Envelope with its payload let go: the command holds everything a batch domain needs (a snapshot's tree is hundreds of MB). */
const light = (env: Envelope): Envelope => ({ ...env, root: { ...env.root, children: [] } });

/** A body decoded with DecodeHints (BatchDomain.hints; PUMP.hintedBody). */
export const HINTED_BODY = PUMP.hintedBody;

/** `hints`: read by the pump before a body of HINTED_BODY or more (lib/pipeline/pump/ahead.ts). */
export function decodeMessage(registry: HandlerRegistry, s: DecodeSettings, body: string, hints?: DecodeHints): Decoded {
  let env: Envelope;
  const lazy = registry.lazySpec();
  try {
    env = decodeEnvelope(body, lazy);
  } catch (e) {
    return { ok: false, failure: classify(e, 'decode') };
  }
  const kind = kindOf(env);
  const flid = env.type === 'FLOP' ? payload(env)[0]?.children.find((c) => c.tag === 'FLID')?.text : undefined;
  const base = { ok: true as const, kind, ...(flid ? { flid } : {}), identity: identityKey(env, s.includeDayBoundary) };
  const entry = registry.entry(env.type, env.styp);
  if (!entry) return { ...base, env: light(env), entry: 'none' };
  // lazy elements only for the domain that declared them; any other reader gets the whole tree
  if (entry.kind === 'tx' || (lazy && entry.domain.lazy !== lazy)) env = { ...env, root: expandAll(env.root) };
  if (entry.kind === 'tx') return { ...base, env, entry: 'tx' };
  try {
    const cmd = entry.domain.decode(env, s.airport, hints);
    return { ...base, env: light(env), entry: 'batch', cmd, ownBatch: entry.domain.ownBatch(cmd) };
  } catch (e) {
    return { ...base, env: light(env), entry: 'batch', failure: classify(e, 'decode') };
  }
}
