// What the pump is given (PumpDeps) and what a batch gives back. The pump's rooms (docs/design.md
// "The pump's steps"): loop.ts (drain, tick, lock slicing), steps.ts (applyBatch: the step order),
// choose.ts (chooseBatch), ahead.ts (read and decode, read ahead), terminal.ts (mirror, terminal,
// failures: logged and counted),
// batch.ts (the batch model: what is to be done with each message), business.ts (the business
// transaction), tail.ts (the tail's ordering rules), ports.ts (locks, savepoints and probes).
import type { Logger } from 'pino';
import type { Clock } from '../../core/clock.ts';
import { slices, type AirportConfig, type Config, type Slices } from '../../core/config.ts';
import type { Service } from '../../core/errors.ts';
import type { Db } from '../../db/postgres.ts';
import type { Inbox } from '../../db/mysql.ts';
import type { Executor } from '../../db/statement.ts';
import type { DecodeHints, HandlerRegistry, Mirror } from '../../domain/handlers.ts';
import type { Crash } from '../../runtime/crash.ts';
import type { WorkerResult } from '../decoder.ts';
import type { TerminalState } from '../../sql/proc-state.ts';
import type { PumpTrace } from './trace.ts';

/** The decode step's engine: lib/pipeline/decoder.ts (a worker thread), or inlineDecoding (lib/pipeline/pump/ahead.ts). */
export interface DecodePort {
  decode(bodies: string[], hints?: DecodeHints): Promise<WorkerResult[]>;
  /** These bodies are about to be decoded: start now what a large one needs (lib/pipeline/decoder.ts). */
  prepare?(bodies: readonly string[]): void;
}

/** What the pump asks of its connections besides its statements of PROC_STATE (lib/pipeline/pump/ports.ts builds them on SQL). */
export interface PumpPorts {
  /** Take PIPELINE_LOCK on the pump's session (waits). */
  lock(): Promise<void>;
  /** Release PIPELINE_LOCK (never throws). */
  unlock(): Promise<void>;
  /** Is another session (the history purge) waiting for PIPELINE_LOCK? */
  lockWanted(): Promise<boolean>;
  /** Run `step` in a savepoint of `tx`: its writes kept when `keep` says so, taken back otherwise. */
  inSavepoint<R>(tx: Executor, step: () => Promise<R>, keep: (r: R) => boolean): Promise<R>;
  /** How to ask a service whether it answers (null: no service to ask). */
  probe(service: Service | null): (() => Promise<unknown>) | null;
}

export interface PumpDeps {
  /** Kysely on the pump's dedicated connection (leader lock held on it; PIPELINE_LOCK taken through `ports`). */
  session: Db;
  /** A second connection (a pool) for the terminal statement: drain runs a batch's mirror and terminal steps while the next batch's business step does (tail.ts). */
  terminalDb: Db;
  inbox: Inbox;
  registry: HandlerRegistry;
  mirror: Mirror;
  ports: PumpPorts;
  /**
   * The decode step: the decode worker (lib/app/composition.ts buildDecoder: off the event loop,
   * under the per-message budget), or inlineDecoding (on this thread, no budget).
   */
  decoder: DecodePort;
  clock: Clock;
  /** apply-batch, identity day boundary, I/O timeout. */
  pump: Slices['pump'];
  airport: AirportConfig;
  failures: Slices['failures'];
  log: Logger;
  /** Crash points of the crash-recovery tests (lib/runtime/crash.ts); none in production. */
  crash?: Crash;
  /** Benchmarks: wall milliseconds per step of applyBatch, added up. */
  timings?: Record<string, number>;
  /** The pump's spans (lib/pipeline/pump/trace.ts); undefined: tracing off. */
  tracer?: PumpTrace;
}

/** The config slices a pump reads (workers/pump.ts, tests and benchmarks build PumpDeps with this). */
export const pumpSettings = (config: Config) => {
  const s = slices(config);
  return { pump: s.pump, airport: s.airport, failures: s.failures };
};

/** Where a message of a batch ended: terminal, or FAILED (held for a retry). */
export type DoneState = TerminalState | 'FAILED';
export type Done = { msgId: number; state: DoneState };

export type TickResult = { kind: 'idle' } | { kind: 'wait'; until: Date; msgId: number } | ({ kind: 'processed' } & Done);
export type BatchResult = { kind: 'idle' } | { kind: 'wait'; until: Date; msgId: number } | { kind: 'done'; done: Done[]; retrySmaller?: number };

export const done = (xs: Done[]): BatchResult => ({ kind: 'done', done: xs });

/** Adds the time since the previous lap to `timings[name]` (benchmarks: PumpDeps.timings); a no-op without timings. */
export function stopwatch(timings: Record<string, number> | undefined): (name: string) => void {
  if (!timings) return () => {};
  let t = performance.now();
  return (name) => {
    const now = performance.now();
    timings[name] = (timings[name] ?? 0) + (now - t);
    t = now;
  };
}
