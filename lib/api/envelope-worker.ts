// Worker thread of lib/api/envelope-check.ts: checks one big message at a time, off the api's
// event loop, and sends an accepted message's bytes back (moved, not copied) with the answer.
import { parentPort } from 'node:worker_threads';
import { checkInWorker } from './envelope-check.ts';

parentPort!.on('message', (m: { id: number; body: Uint8Array }) => {
  const result = checkInWorker(m.body);
  if (!result.ok) return parentPort!.postMessage({ id: m.id, result }); // the bytes are not needed any more
  const own = m.body.byteOffset === 0 && m.body.byteLength === m.body.buffer.byteLength && m.body.buffer instanceof ArrayBuffer;
  parentPort!.postMessage({ id: m.id, result, body: m.body }, own ? [m.body.buffer as ArrayBuffer] : []);
});
