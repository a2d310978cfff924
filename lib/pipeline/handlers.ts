// The handler registry: business handlers keyed by TYPE/STYP. A handler runs inside the
// pump's business transaction (PIPELINE_LOCK held) and returns what changed; the pump owns
// the three-step success path (commit → Redis mirror → terminal). A kind with no handler is
// SKIPPED(unsupported).
import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Database } from '../db/schema.ts';
import type { Envelope } from '../sis/envelope.ts';
import { metricKind, type AfterCommitCounts } from '../runtime/metrics.ts';

export interface HandlerContext {
  /** The business transaction. Domains use `ctx.tx.withTables<TheirTables>()` or `sql`. */
  tx: Transaction<Database>;
  msgId: number;
  env: Envelope;
  /** From the injected clock, once per message. */
  now: Date;
  config: Config;
  log: Logger;
}

export type HandlerOutcome =
  | {
      outcome: 'applied';
      /** FLIDs whose Redis snapshot the pump brings in line with Postgres after the commit (step 2). */
      mirror?: string[];
      /** graphile-worker task names to wake in the same transaction (e.g. 'msg-dispatch'). */
      wake?: string[];
      /** Metrics to count once the business transaction committed (countAfterCommit), never per attempt. */
      counts?: AfterCommitCounts;
    }
  | { outcome: 'skipped'; reason: string };

export type Handler = (ctx: HandlerContext) => Promise<HandlerOutcome>;

/** Step 2 of the success path: make Redis match Postgres for these flights. Throws on failure. */
export interface Mirror {
  sync(flids: string[]): Promise<void>;
}

export class HandlerRegistry {
  private readonly map = new Map<string, Handler>();

  /** styp '*' = every STYP of that TYPE not registered more specifically. */
  register(type: string, styp: string | '*', handler: Handler): this {
    const key = `${type}/${styp}`;
    if (this.map.has(key)) throw new Error(`handler for ${key} registered twice`);
    this.map.set(key, handler);
    return this;
  }

  resolve(type: string, styp: string): Handler | undefined {
    return this.map.get(`${type}/${styp}`) ?? this.map.get(`${type}/*`);
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

  /** The bounded `kind` label of a message's metrics (lib/runtime/metrics.ts metricKind). */
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
