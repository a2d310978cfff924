// The handler registry: what the pump does with each TYPE/STYP. Two kinds of entry:
//   - a batch domain (the flight domain): the message is decoded to a command (pure), and a
//     batch of such messages is applied in memory in inbox order, then written in a fixed number
//     of statements (lib/flight/session.ts);
//   - a transaction handler (reference data, RSTA, SCHS, EROR, tests): runs its own statements in
//     the batch's business transaction, inside a savepoint.
// Both run inside the pump's business transaction (PIPELINE_LOCK held) and return what they
// changed; the pump owns the three-step success path (commit → Redis mirror → terminal). A kind
// with no entry is SKIPPED(unsupported).
// It sits in lib/domain/, below the pump and beside the domains that implement it: the domains
// never import the pipeline, the pump never imports a domain (lib/app/composition.ts fills the registry).
import type { Logger } from 'pino';
import type { AirportConfig } from '../core/config.ts';
import type { Db } from '../db/postgres.ts';
import type { Envelope } from '../sis/envelope.ts';
import type { LazySpec } from '../sis/xml.ts';
import { metricKind, type AfterCommitCounts } from '../runtime/labels.ts';

export interface HandlerContext {
  /** The business transaction. Domains call the operations of lib/sql/ on it (lib/db/statement.ts). */
  tx: Db;
  msgId: number;
  env: Envelope;
  /** From the injected clock, once per batch. */
  now: Date;
  /** The one part of the configuration a domain reads. */
  airport: AirportConfig;
  log: Logger;
}

export type HandlerOutcome =
  | {
      outcome: 'applied';
      /** FLIDs whose Redis snapshot the pump brings in line with Postgres after the commit (its mirror step). */
      mirror?: string[];
      /** graphile-worker task names to wake in the same transaction (e.g. 'msg-dispatch'). */
      wake?: string[];
      /** Metrics to count once the business transaction committed (countAfterCommit), never per attempt. */
      counts?: AfterCommitCounts;
    }
  /** Skipped: nothing written; `mirror` = the flights it addresses all the same (their Redis copy is brought in line too). */
  | { outcome: 'skipped'; reason: string; mirror?: string[] };

/** A transaction handler. A skipped outcome or a thrown error rolls its writes back (savepoint). */
export type Handler = (ctx: HandlerContext) => Promise<HandlerOutcome>;

/**
 * What the pump tells the decode step of a large body before decoding it (BatchDomain.hints):
 * snapshot records whose digest (lib/flight/digest.ts) names a flight that is still what that
 * record left, with that flight and its operation day — such a record is not decoded.
 */
export interface DecodeHints {
  knownRecords?: ReadonlyMap<string, { flid: string; day: string }>;
}

/** One message of a batch, handed to a batch domain. */
export interface DomainMessage<C> {
  msgId: number;
  env: Envelope;
  cmd: C;
  log: Logger;
}

/** A batch domain's work inside one business transaction. */
export interface DomainBatch<C> {
  /** Load what these commands address, in as few statements as possible (before the first apply). */
  /** `recovered`: messages of this batch whose business transaction committed earlier (their mirror scope is asked for with addressed). */
  preload(cmds: readonly C[], recovered?: readonly number[]): Promise<void>;
  /** Apply one message, in inbox order, on top of the earlier ones. All or nothing: a throw leaves no trace in the batch. */
  apply(m: DomainMessage<C>): Promise<HandlerOutcome>;
  /** Redis scope of a message whose business transaction committed earlier (crash recovery): from the current state and what it changed. */
  addressed(m: { msgId: number; cmd: C }): Promise<string[]>;
  /**
   * Write the net effect of every message applied. `states`: the state, as this transaction
   * leaves it, of the flights the batch loaded (null = none) — the mirror step uses them instead
   * of reading them back (they are what commits: the pump is the only writer under PIPELINE_LOCK).
   */
  write(): Promise<{ wake: string[]; states?: ReadonlyMap<string, unknown> }>;
  /** The business transaction committed (called by the pump after the commit, never on a rollback). */
  committed?(): void;
}

export interface BatchDomain<C> {
  /** Pure: the message's command. Throws a PipelineError (MALFORMED/PROTOCOL) for a bad message. `hints`: DecodeHints. */
  decode(env: Envelope, airport: AirportConfig, hints?: DecodeHints): C;
  /** Elements of its messages the envelope decode may leave unbuilt (lib/sis/xml.ts lazy): decode expands what it reads. */
  lazy?: LazySpec;
  /** DecodeHints as the committed state gives them now (read before a large body is decoded). */
  hints?(db: Db): Promise<DecodeHints>;
  /** A command that is applied as a batch of its own (a snapshot). */
  ownBatch(cmd: C): boolean;
  open(ctx: { tx: Db; now: Date; airport: AirportConfig; log: Logger }): DomainBatch<C>;
  /**
   * Forget anything kept between batches. The pump calls it whenever it (re)takes PIPELINE_LOCK
   * and after a failed business transaction: what a domain keeps is valid only while the pump
   * holds the lock without a break (the history purge writes under the same lock).
   */
  reset?(): void;
}

export type RegistryEntry = { kind: 'tx'; handler: Handler } | { kind: 'batch'; domain: BatchDomain<unknown> };

/** The pump's mirror step (docs/design.md "The pump's steps"): make Redis match Postgres for these flights. Throws on failure. */
export interface Mirror {
  /** `known`: committed states of some of them (null = no such flight), from the business transaction; the others are read. */
  sync(flids: string[], known?: ReadonlyMap<string, unknown>): Promise<void>;
  /** Answers when the store behind the mirror answers (the pump probes it while the head is held for INFRA). */
  probe?(): Promise<void>;
}

export class HandlerRegistry {
  private readonly map = new Map<string, RegistryEntry>();

  /** A transaction handler. styp '*' = every STYP of that TYPE not registered more specifically. */
  register(type: string, styp: string | '*', handler: Handler): this {
    return this.put(type, styp, { kind: 'tx', handler });
  }

  /** A batch domain for this TYPE/STYP. */
  registerDomain<C>(type: string, styp: string | '*', domain: BatchDomain<C>): this {
    return this.put(type, styp, { kind: 'batch', domain: domain as BatchDomain<unknown> });
  }

  private put(type: string, styp: string, e: RegistryEntry): this {
    const key = `${type}/${styp}`;
    if (this.map.has(key)) throw new Error(`handler for ${key} registered twice`);
    this.map.set(key, e);
    this.lazy = undefined;
    return this;
  }

  entry(type: string, styp: string): RegistryEntry | undefined {
    return this.map.get(`${type}/${styp}`) ?? this.map.get(`${type}/*`);
  }

  /** Any entry as a transaction handler (a batch domain applies a batch of one): tests and tools apply single messages this way. */
  resolve(type: string, styp: string): Handler | undefined {
    const e = this.entry(type, styp);
    if (!e) return undefined;
    if (e.kind === 'tx') return e.handler;
    const domain = e.domain;
    return async (ctx) => {
      const cmd = domain.decode(ctx.env, ctx.airport);
      const batch = domain.open(ctx);
      await batch.preload([cmd]);
      const out = await batch.apply({ msgId: ctx.msgId, env: ctx.env, cmd, log: ctx.log });
      if (out.outcome === 'skipped') return out;
      const { wake } = await batch.write();
      const all = [...new Set([...(out.wake ?? []), ...wake])];
      return all.length ? { ...out, wake: all } : out;
    };
  }

  private lazy: { spec: LazySpec | undefined } | undefined;

  /** The lazy elements of the batch domains (BatchDomain.lazy; at most one domain declares them): asked per message, found once. */
  lazySpec(): LazySpec | undefined {
    if (!this.lazy) {
      const e = [...this.map.values()].find((x) => x.kind === 'batch' && x.domain.lazy);
      this.lazy = { spec: e?.kind === 'batch' ? e.domain.lazy : undefined };
    }
    return this.lazy.spec;
  }

  /** Every batch domain's DecodeHints, merged. */
  async decodeHints(db: Db): Promise<DecodeHints> {
    let out: DecodeHints = {};
    const domains = new Set([...this.map.values()].flatMap((e) => (e.kind === 'batch' ? [e.domain] : [])));
    for (const d of domains) if (d.hints) out = { ...out, ...(await d.hints(db)) };
    return out;
  }

  /** Every batch domain's reset (see BatchDomain.reset). */
  resetDomains(): void {
    for (const e of new Set(this.map.values())) if (e.kind === 'batch') e.domain.reset?.();
  }

  kinds(): string[] {
    return [...this.map.keys()].sort();
  }

  private readonly declared = new Map<string, readonly string[]>();
  private known: Set<string> | undefined;

  /** The STYPs a wildcard ('TYPE/*') handler knows, for metric labels (FLOP: its STYP table). */
  declareStyps(type: string, styps: readonly string[]): this {
    this.declared.set(type, [...(this.declared.get(type) ?? []), ...styps]);
    this.known = undefined;
    return this;
  }

  /** Every kind a metric label may carry: exact registrations, declared STYPs of wildcards, and 'TYPE/' per handled TYPE. */
  knownKinds(): ReadonlySet<string> {
    if (!this.known) {
      const k = new Set<string>();
      for (const key of this.map.keys()) {
        const [type, styp] = key.split('/');
        k.add(`${type}/`);
        if (styp !== '*') k.add(key);
      }
      for (const [type, styps] of this.declared) for (const styp of styps) k.add(`${type}/${styp}`);
      this.known = k;
    }
    return this.known;
  }

  /** The bounded `kind` label of a message's metrics (lib/runtime/labels.ts metricKind). */
  metricKind(type: string, styp: string): string {
    return metricKind(type, styp, this.knownKinds());
  }

  /** The same for a kind as stored in PROC_STATE.KIND ('TYPE/STYP' or 'TYPE'); null/'' → 'unknown'. */
  metricKindOf(kind: string | null | undefined): string {
    if (!kind) return 'unknown';
    const slash = kind.indexOf('/');
    return slash === -1 ? this.metricKind(kind, '') : this.metricKind(kind.slice(0, slash), kind.slice(slash + 1));
  }
}
