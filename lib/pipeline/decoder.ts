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
// Jobs are decoded one after the other, in the order they were asked for.
import { Worker } from 'node:worker_threads';
import type { Failure } from '../core/errors.ts';
import type { Decoded, DecodeSettings } from './decoding.ts';

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

/** What the worker receives and answers (lib/app/decode-worker.ts). */
export type DecodeRequest = { job: number; from: number; bodies: string[] };
export type DecodeAnswer = { job: number; index: number; result: WorkerResult } | { ready: true };

interface Job {
  bodies: string[];
  results: WorkerResult[];
  /** The message the worker is on. */
  next: number;
  resolve: (r: WorkerResult[]) => void;
}

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
  /** The worker has loaded its modules: a message's budget starts only then (a new worker's start-up is not the message's). */
  private ready = false;
  private closed = false;
  /** Workers terminated for a message over its budget (tests, logs). */
  overBudget = 0;

  private readonly opts: DecoderOptions;
  constructor(opts: DecoderOptions) {
    this.opts = opts;
  }

  /** Decode these bodies (results in the same order). */
  decode(bodies: string[]): Promise<WorkerResult[]> {
    if (this.closed) return Promise.reject(new Error('decoder closed'));
    if (bodies.length === 0) return Promise.resolve([]);
    return new Promise((resolve) => {
      this.queue.push({ bodies, results: [], next: 0, resolve });
      this.start();
    });
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
    const w = (this.worker ??= this.spawn());
    w.ref(); // a job in flight keeps the process alive until it is answered
    const id = ++this.seq;
    this.jobId = id;
    if (this.ready) this.arm();
    w.postMessage({ job: id, from: job.next, bodies: job.bodies.slice(job.next) } satisfies DecodeRequest);
  }

  /** The budget of the message the worker is on starts now. */
  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.overrun(), this.opts.budgetMs);
  }

  private answer(m: DecodeAnswer): void {
    if ('ready' in m) {
      this.ready = true;
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

  private spawn(): Worker {
    this.ready = false;
    const w = new Worker(this.opts.url, {
      workerData: { settings: this.opts.settings, registry: this.opts.registry ?? {} },
      resourceLimits: { maxOldGenerationSizeMb: this.opts.maxHeapMb ?? 2048 },
    });
    let error = '';
    w.on('message', (m: DecodeAnswer) => w === this.worker && this.answer(m)); // never a terminated worker's
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
    const pending = [this.current, ...this.queue.splice(0)];
    this.current = undefined;
    for (const job of pending) job?.resolve(job.bodies.map((_, i) => job.results[i] ?? { ok: false, failure: { cls: 'INTERNAL', detail: 'decoder closed' } }));
    await w?.terminate();
  }
}
