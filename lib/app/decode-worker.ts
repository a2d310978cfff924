// The pump's decode worker thread (lib/pipeline/decoder.ts): decodes each body of a job with the
// same handler registry as the pump (buildRegistry) and answers message by message, so the pump
// knows which message is over its budget.
import { parentPort, workerData } from 'node:worker_threads';
import { buildRegistry } from './composition.ts';
import { releaseMemory } from '../runtime/gc.ts';
import { decodeMessage, type DecodeSettings } from '../pipeline/decoding.ts';
import type { DecodeAnswer, DecodeRequest } from '../pipeline/decoder.ts';

const { settings, registry: options } = workerData as { settings: DecodeSettings; registry: { changeRecords?: boolean; ruleOverride?: string } };
const registry = buildRegistry(options);

parentPort!.on('message', (m: DecodeRequest) => {
  if (m === 'release') return releaseMemory(); // set aside while a large body's worker runs: its garbage goes
  let stop = false;
  m.bodies.forEach((body, i) => {
    const index = m.from + i;
    if (stop) return void parentPort!.postMessage({ job: m.job, index, result: 'later' } satisfies DecodeAnswer);
    const result = decodeMessage(registry, settings, body, m.hints);
    stop = result.ok && result.ownBatch === true; // a snapshot is a batch of its own: what follows waits for a later batch
    try {
      parentPort!.postMessage({ job: m.job, index, result } satisfies DecodeAnswer);
    } catch {
      // a command that cannot be cloned (DataCloneError): the pump decodes this one itself
      parentPort!.postMessage({ job: m.job, index, result: 'inline' } satisfies DecodeAnswer);
    }
  });
});
parentPort!.postMessage({ ready: true } satisfies DecodeAnswer);
