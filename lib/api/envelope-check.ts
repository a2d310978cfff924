// POST /cminmsgs/send validates a message before it reaches the inbox: well-formed XML with a
// META envelope (lib/sis/envelope.ts). Parsing is CPU-bound (a 15.6 MB message of <b/> siblings
// takes ~10 s), so it is bounded three ways (issue 15 item 2):
//   - a cheap element count first: more than MAX_ELEMENTS start tags → 413, nothing parsed;
//   - messages over INLINE_BYTES are parsed in one worker thread, one at a time, never on the
//     event loop (/healthz and small messages keep answering); at most MAX_QUEUED wait;
//   - a parse that takes longer than PARSE_TIMEOUT_MS ends the worker → 413.
// Whatever the parser throws (nesting over its limit, prototype names such as __proto__) is the
// sender's fault: 400 with the reason, never a 500.
import { Worker } from 'node:worker_threads';
import { decodeEnvelope } from '../sis/envelope.ts';
import { PipelineError } from '../core/errors.ts';

export const INLINE_BYTES = 32 * 1024;
export const MAX_ELEMENTS = 1_000_000;
export const PARSE_TIMEOUT_MS = 20_000;
export const MAX_QUEUED = 8;

export type EnvelopeMeta = { type: string; styp: string; sndr: string; seqn: string };
export type CheckResult = { ok: true; meta: EnvelopeMeta; text: string } | { ok: false; status: 400 | 413 | 503; error: string; reason: string };

function countElements(text: string): number {
  let n = 0;
  for (let i = text.indexOf('<'); i !== -1; i = text.indexOf('<', i + 1)) {
    const c = text.charCodeAt(i + 1);
    if (c !== 0x2f && c !== 0x3f && c !== 0x21) n++; // not </, <?, <!
  }
  return n;
}

/** The whole check, synchronous (in the worker, or inline for small messages): UTF-8, size, XML, META. */
export function checkEnvelope(body: Uint8Array): CheckResult {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return { ok: false, status: 400, error: 'invalid-utf8', reason: 'body is not valid UTF-8 (the inbox column could not store it)' };
  }
  const elements = countElements(text);
  if (elements > MAX_ELEMENTS) return { ok: false, status: 413, error: 'too-large', reason: `message has ${elements} elements, more than the ${MAX_ELEMENTS} accepted` };
  try {
    const e = decodeEnvelope(text);
    return { ok: true, meta: { type: e.type, styp: e.styp, sndr: e.sndr, seqn: e.seqn }, text };
  } catch (e) {
    if (e instanceof PipelineError) return { ok: false, status: 400, error: e.failure.cls.toLowerCase(), reason: e.failure.detail };
    return { ok: false, status: 400, error: 'malformed', reason: `not accepted by the XML parser: ${String((e as Error)?.message ?? e).slice(0, 300)}` };
  }
}

/** One worker thread, one message at a time, a bounded queue. */
export class EnvelopeChecker {
  private worker: Worker | undefined;
  private queue: { body: Uint8Array; resolve: (r: CheckResult) => void }[] = [];
  private busy = false;
  private seq = 0;
  private closed = false;

  /** Checks `body`; a big one is moved (not copied) to the worker: do not use it afterwards. */
  async check(body: Uint8Array): Promise<CheckResult> {
    if (body.length <= INLINE_BYTES) return checkEnvelope(body);
    if (this.queue.length >= MAX_QUEUED) return { ok: false, status: 503, error: 'busy', reason: `${MAX_QUEUED} big messages are waiting to be checked; retry later` };
    return new Promise((resolve) => {
      this.queue.push({ body, resolve });
      this.next();
    });
  }

  private next(): void {
    if (this.busy || this.closed) return;
    const job = this.queue.shift();
    if (!job) return;
    this.busy = true;
    const w = (this.worker ??= this.spawn());
    const id = ++this.seq;
    const done = (r: CheckResult) => {
      clearTimeout(timer);
      w.off('message', onMessage);
      w.off('exit', onExit);
      this.busy = false;
      job.resolve(r);
      this.next();
    };
    const onMessage = (m: { id: number; result: CheckResult }) => m.id === id && done(m.result);
    const onExit = () => {
      this.worker = undefined;
      done({ ok: false, status: 413, error: 'too-large', reason: 'message could not be checked within the memory limit' });
    };
    const timer = setTimeout(() => {
      w.off('exit', onExit);
      this.worker = undefined;
      void w.terminate();
      done({ ok: false, status: 413, error: 'too-large', reason: `message took longer than ${PARSE_TIMEOUT_MS / 1000} s to check` });
    }, PARSE_TIMEOUT_MS);
    w.on('message', onMessage);
    w.once('exit', onExit);
    // The body's memory moves to the worker when the Buffer owns all of it (Fastify's
    // concatenated body does); otherwise it is copied.
    const b = job.body;
    const own = b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer;
    w.postMessage({ id, body: b }, own ? [b.buffer as ArrayBuffer] : []);
  }

  private spawn(): Worker {
    const w = new Worker(new URL('./envelope-worker.ts', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: 1024 } });
    w.unref();
    w.on('error', () => {}); // out of memory etc.: 'exit' follows and answers the request
    return w;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const j of this.queue.splice(0)) j.resolve({ ok: false, status: 503, error: 'closing', reason: 'the api is shutting down' });
    await this.worker?.terminate();
  }
}
