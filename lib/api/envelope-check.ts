// POST /cminmsgs/send validates a message before it reaches the inbox: well-formed XML with a
// META envelope (lib/sis/envelope.ts), refused for the same reasons the pump would refuse it.
// The check is the one linear XML pass (lib/sis/scan.ts) over the whole text, then the envelope
// read from a skeleton of the document (its root, its META element, a stand-in for the payload):
// the full tree is never built here, so a 16 MB message costs its text, not a parse tree many
// times its size. It is bounded (issue 15 item 2):
//   - a cheap element count first: more than MAX_ELEMENTS start tags → 413, nothing parsed;
//   - messages over INLINE_BYTES are checked in one worker thread, one at a time, never on the
//     event loop (/healthz and small messages keep answering); at most MAX_QUEUED wait;
//   - a check that takes longer than PARSE_TIMEOUT_MS ends the worker (a new one takes the next
//     message) → 413 with the reason;
//   - a client that goes away cancels its check: taken out of the queue, or, when its check is
//     running, the worker is ended (a new one takes the next message).
// Whatever the parser throws is the sender's fault: 400 with the reason, never a 500.
import { Worker } from 'node:worker_threads';
import { decodeEnvelope } from '../sis/envelope.ts';
import { checkXml, XmlError } from '../sis/scan.ts';
import { malformed, PipelineError } from '../core/errors.ts';

export const INLINE_BYTES = 32 * 1024;
export const MAX_ELEMENTS = 1_000_000;
export const PARSE_TIMEOUT_MS = 20_000;
export const MAX_QUEUED = 8;

export type EnvelopeMeta = { type: string; styp: string; sndr: string; seqn: string };
export type CheckResult = { ok: true; meta: EnvelopeMeta; text: string } | { ok: false; status: 400 | 413 | 499 | 503; error: string; reason: string };
/** What the worker answers: the text stays with the body's bytes, which come back (moved, not copied). */
type WorkerResult = { ok: true; meta: EnvelopeMeta } | Extract<CheckResult, { ok: false }>;

function countElements(text: string): number {
  let n = 0;
  for (let i = text.indexOf('<'); i !== -1; i = text.indexOf('<', i + 1)) {
    const c = text.charCodeAt(i + 1);
    if (c !== 0x2f && c !== 0x3f && c !== 0x21) n++; // not </, <?, <!
  }
  return n;
}

/** The envelope of a message, from the one XML pass and a skeleton of the document (never the whole tree). */
export function envelopeOf(text: string): EnvelopeMeta {
  let outline: ReturnType<typeof checkXml>;
  try {
    outline = checkXml(text);
  } catch (e) {
    if (e instanceof XmlError) throw malformed(e.message);
    throw e;
  }
  const meta = outline.meta ? text.slice(outline.meta[0], outline.meta[1]) : '';
  const e = decodeEnvelope(`<${outline.root}>${meta}${outline.payload ? '<PAYLOAD/>' : ''}</${outline.root}>`);
  return { type: e.type, styp: e.styp, sndr: e.sndr, seqn: e.seqn };
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
    return { ok: true, meta: envelopeOf(text), text };
  } catch (e) {
    if (e instanceof PipelineError) return { ok: false, status: 400, error: e.failure.cls.toLowerCase(), reason: e.failure.detail };
    return { ok: false, status: 400, error: 'malformed', reason: `not accepted by the XML parser: ${String((e as Error)?.message ?? e).slice(0, 300)}` };
  }
}

/** The worker's side: the check without the text (which stays with the bytes, sent back). */
export function checkInWorker(body: Uint8Array): WorkerResult {
  const r = checkEnvelope(body);
  return r.ok ? { ok: true, meta: r.meta } : r;
}

const GONE: CheckResult = { ok: false, status: 499, error: 'client-gone', reason: 'the client closed the connection before the check ended' };

type Job = { body: Uint8Array; resolve: (r: CheckResult) => void; signal?: AbortSignal };

/** One worker thread, one message at a time, a bounded queue. */
export class EnvelopeChecker {
  private worker: Worker | undefined;
  private queue: Job[] = [];
  private busy = false;
  private seq = 0;
  private closed = false;

  /**
   * Checks `body`; a big one is moved (not copied) to the worker and comes back: do not use it
   * afterwards. `signal` (the client went away) cancels the check.
   */
  async check(body: Uint8Array, signal?: AbortSignal): Promise<CheckResult> {
    if (body.length <= INLINE_BYTES) return checkEnvelope(body);
    if (signal?.aborted) return GONE;
    if (this.queue.length >= MAX_QUEUED) return { ok: false, status: 503, error: 'busy', reason: `${MAX_QUEUED} big messages are waiting to be checked; retry later` };
    return new Promise((resolve) => {
      const job: Job = { body, resolve, signal };
      this.queue.push(job);
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.queue.indexOf(job);
          if (at !== -1) {
            this.queue.splice(at, 1);
            resolve(GONE);
          }
        },
        { once: true },
      );
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
      job.signal?.removeEventListener('abort', onAbort);
      this.busy = false;
      job.resolve(r);
      this.next();
    };
    const end = (r: CheckResult) => {
      w.off('exit', onExit);
      if (this.worker === w) this.worker = undefined;
      void w.terminate();
      done(r);
    };
    // The bytes come back with the answer: the text is decoded here once, not copied across.
    const onMessage = (m: { id: number; result: WorkerResult; body?: Uint8Array }) => {
      if (m.id !== id) return;
      done(m.result.ok && m.body ? { ok: true, meta: m.result.meta, text: new TextDecoder('utf-8').decode(m.body) } : (m.result as CheckResult));
    };
    const onExit = () => {
      this.worker = undefined;
      done({ ok: false, status: 413, error: 'too-large', reason: 'message could not be checked within the memory limit' });
    };
    const onAbort = () => end(GONE);
    const timer = setTimeout(() => end({ ok: false, status: 413, error: 'too-large', reason: `message took longer than ${PARSE_TIMEOUT_MS / 1000} s to check` }), PARSE_TIMEOUT_MS);
    w.on('message', onMessage);
    w.once('exit', onExit);
    job.signal?.addEventListener('abort', onAbort, { once: true });
    // The body's memory moves to the worker when the Buffer owns all of it (Fastify's
    // concatenated body does); otherwise it is copied.
    const b = job.body;
    const own = b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && b.buffer instanceof ArrayBuffer;
    w.postMessage({ id, body: b }, own ? [b.buffer as ArrayBuffer] : []);
  }

  private spawn(): Worker {
    const w = new Worker(new URL('./envelope-worker.ts', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: 512 } });
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
