// The pump's decode worker: XML parse + decode (lib/pipeline/decoding.ts) of a batch's bodies in
// a worker thread, so that the pump's event loop stays free (its /healthz answers, the business
// transaction of the batch before runs meanwhile: docs/decisions.md "Pump v3").
//
// Per-message budget (msgx.pipeline.message-budget): the worker decodes a job's messages one at
// a time and answers each as soon as it is decoded. When one message takes longer than the
// budget, the worker is terminated (a synchronous parse cannot be interrupted otherwise), that
// message's result is MALFORMED naming the budget, and a new worker decodes the job's remaining
// messages. A worker that dies by itself (out of memory) makes its current message a retryable
// INTERNAL failure (the failure ladder ends it DEAD after its attempts).
//
// A job with a large body (over LARGE_BODY: a big snapshot) is decoded by a worker of its own,
// with a small young generation, ended after the job; the ordinary worker is set aside meanwhile,
// gives its garbage back, and takes the next jobs (docs/decisions.md "Snapshots in bounded memory").
//
// Jobs are decoded one after the other, in the order they were asked for.
import { Worker } from 'node:worker_threads';
import type { Failure } from '../core/errors.ts';
import type { DecodeHints } from '../domain/handlers.ts';
import { LARGE_BODY, type Decoded, type DecodeSettings } from './decoding.ts';
import { PUMP } from '../core/tuning.ts';

/**
 * A result from the worker; 'inline': the command cannot cross threads (not cloneable), decode it
 * on the caller's thread; 'later': not decoded, it follows a message that is a batch of its own.
 */
export type WorkerResult = Decoded | 'inline' | 'later';

export interface DecoderOptions {
  /** The worker's entry module (lib/app/decode-worker.ts: it builds the same handler registry). */
  url: URL;
  settings: DecodeSettings;
  /** Passed to the worker's registry (buildRegistry options). */
  registry?: Record<string, unknown>;
  budgetMs: number;
  /** Heap limit of the worker (MB). */
  maxHeapMb?: number;
}

/** What the worker receives ('release': give its garbage back now) and answers (lib/app/decode-worker.ts). */
export type DecodeRequest = { job: number; from: number; bodies: string[]; hints?: DecodeHints } | 'release';
export type DecodeAnswer = { job: number; index: number; result: WorkerResult } | { ready: true };

interface Job {
  bodies: string[];
  hints?: DecodeHints;
  results: WorkerResult[];
  /** The message the worker is on. */
  next: number;
  resolve: (r: WorkerResult[]) => void;
}

const LARGE_YOUNG_GENERATION_MB = PUMP.largeYoungGenerationMb;

/** A body over LARGE_BODY among these: decoded by a worker of its own. */
const hasLarge = (bodies: readonly string[]) => bodies.some((b) => b.length > LARGE_BODY);

export const budgetFailure = (budgetMs: number): Failure => ({
  cls: 'MALFORMED',
  detail: `decoding took longer than the per-message budget of ${budgetMs} ms (msgx.pipeline.message-budget); the message was not applied`,
});

export class Decoder {
  private worker: Worker | undefined;
  private queue: Job[] = [];
  private current: Job | undefined;
  private timer: NodeJS.Timeout | undefined;
  private seq = 0;
  /** Workers that have loaded their modules: a message's budget starts only then (a new worker's start-up is not the message's). */
  private readonly ready = new WeakSet<Worker>();
  /** The current worker decodes a job with a large body (ended after it). */
  private large = false;
  /** The ordinary worker, set aside while a large body's worker runs (taken back after, warm). */
  private parked: Worker | undefined;
  private closed = false;
  /** Workers terminated for a message over its budget (tests, logs). */
  overBudget = 0;
  /** Workers started (tests): one more after every message over its budget, a crash or a large body. */
  started = 0;

  private readonly opts: DecoderOptions;
  constructor(opts: DecoderOptions) {
    this.opts = opts;
  }

  /** Decode these bodies (results in the same order), with these hints (lib/pipeline/pump/ahead.ts). */
  decode(bodies: string[], hints?: DecodeHints): Promise<WorkerResult[]> {
    if (this.closed) return Promise.reject(new Error('decoder closed'));
    if (bodies.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      this.queue.push({ bodies, results: [], next: 0, resolve, ...(hints ? { hints } : {}) });
      this.start();
    });
  }

  /**
   * These bodies are about to be decoded (the pump has read them and now reads their hints): when
   * one is large, start its worker now, so that the worker's start (its modules, ~100 ms on a slow
   * machine) overlaps the hints query instead of following it. Only while nothing is being
   * decoded; the job that follows takes it (post), an ordinary job instead ends it and takes the
   * parked worker back.
   */
  prepare(bodies: readonly string[]): void {
    if (!hasLarge(bodies) || this.closed || this.current || this.queue.length > 0 || (this.worker && this.large)) return;
    this.switchTo(true);
    this.worker = this.spawn(true);
    this.worker.unref(); // no job yet: never keeps the process alive
  }

  private start(): void {
    if (this.current || this.closed) return;
    const job = this.queue.shift();
    if (!job) {
      this.worker?.unref(); // idle: never keeps the process alive
      return;
    }
    this.current = job;
    this.post(job);
  }

  private jobId = 0;

  /** Send the job's remaining messages to the worker (a new one after a termination). */
  private post(job: Job): void {
    // a job with a large body (a snapshot) gets a worker of its own, with a small young generation,
    // ended after the job; the ordinary worker waits meanwhile and is taken back warm
    const large = hasLarge(job.bodies.slice(job.next));
    this.switchTo(large);
    const w = (this.worker ??= this.spawn(large));
    w.ref(); // a job in flight keeps the process alive until it is answered
    const id = ++this.seq;
    this.jobId = id;
    if (this.ready.has(w)) this.arm();
    w.postMessage({ job: id, from: job.next, bodies: job.bodies.slice(job.next), ...(job.hints ? { hints: job.hints } : {}) } satisfies DecodeRequest);
  }

  /**
   * Leaves the current worker only if it is of the kind wanted (a large body's or an ordinary one):
   * an ordinary worker is parked (it gives its garbage back) for a large body's, a large body's
   * worker ended; the parked one is taken back for ordinary bodies. No worker after it: spawn one.
   */
  private switchTo(large: boolean): void {
    if (this.worker && this.large !== large) {
      if (large && !this.parked) {
        this.parked = this.worker;
        this.parked.postMessage('release');
        this.parked.unref();
        this.worker = undefined;
      } else this.drop();
    }
    if (!this.worker && !large && this.parked) {
      this.worker = this.parked;
      this.parked = undefined;
      this.large = false;
    }
  }

  /** The budget of the message the worker is on starts now. */
  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.overrun(), this.opts.budgetMs);
  }

  private answer(m: DecodeAnswer): void {
    if ('ready' in m) {
      if (this.current) this.arm();
      return;
    }
    const job = this.current;
    if (!job || m.job !== this.jobId || m.index !== job.next) return;
    job.results.push(m.result);
    job.next++;
    if (job.next < job.bodies.length) this.arm();
    else this.finish(job);
  }

  private finish(job: Job): void {
    clearTimeout(this.timer);
    this.current = undefined;
    // the worker that decoded a large body goes, and its heap with it; the next job starts an ordinary one
    if (this.large) this.drop();
    job.resolve(job.results);
    this.start();
  }

  /** The current message ran over its budget: end the worker, the message is MALFORMED, the rest go to a new worker. */
  private overrun(): void {
    const job = this.current;
    if (!job) return;
    this.overBudget++;
    this.drop();
    this.skip(job, { ok: false, failure: budgetFailure(this.opts.budgetMs) });
  }

  /** The worker stopped by itself (out of memory, a crash): its current message fails retryably. */
  private died(w: Worker, why: string): void {
    if (w === this.parked) this.parked = undefined;
    if (w !== this.worker) return;
    this.worker = undefined;
    const job = this.current;
    if (!job) return;
    clearTimeout(this.timer);
    this.skip(job, { ok: false, failure: { cls: 'INTERNAL', detail: `decode worker stopped: ${why}` } });
  }

  private skip(job: Job, result: Decoded): void {
    job.results.push(result);
    job.next++;
    if (job.next < job.bodies.length) this.post(job);
    else this.finish(job);
  }

  private drop(): void {
    const w = this.worker;
    this.worker = undefined;
    clearTimeout(this.timer);
    if (w) void w.terminate();
  }

  private spawn(large: boolean): Worker {
    this.large = large;
    this.started++;
    const w = new Worker(this.opts.url, {
      workerData: { settings: this.opts.settings, registry: this.opts.registry ?? {} },
      // for a large body, a young generation of 16 MB: V8's default for this heap size lets a snapshot's
      // decode take ~200 MB of RSS; for ordinary bodies the default (decoding FLOPs with 16 MB costs ~15 % more CPU)
      resourceLimits: { maxOldGenerationSizeMb: this.opts.maxHeapMb ?? 2048, ...(large ? { maxYoungGenerationSizeMb: LARGE_YOUNG_GENERATION_MB } : {}) },
    });
    let error = '';
    w.on('message', (m: DecodeAnswer) => {
      if ('ready' in m) this.ready.add(w);
      if (w === this.worker) this.answer(m); // never a terminated or parked worker's
    });
    w.on('error', (e) => {
      error = e instanceof Error ? e.message : String(e);
    });
    w.on('exit', (code) => this.died(w, error || `exit code ${code}`));
    return w;
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = this.worker;
    this.drop();
    const parked = this.parked;
    this.parked = undefined;
    if (parked) void parked.terminate();
    const pending = [this.current, ...this.queue.splice(0)];
    this.current = undefined;
    for (const job of pending) job?.resolve(job.bodies.map((_, i) => job.results[i] ?? { ok: false, failure: { cls: 'INTERNAL', detail: 'decoder closed' } }));
    await w?.terminate();
  }
}
