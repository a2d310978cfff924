// Worker thread of lib/api/envelope-check.ts: decodes the SIS envelope of one big message at a
// time, off the api's event loop.
import { parentPort } from 'node:worker_threads';
import { checkEnvelope } from './envelope-check.ts';

parentPort!.on('message', (m: { id: number; body: Uint8Array }) => {
  parentPort!.postMessage({ id: m.id, result: checkEnvelope(m.body) });
});
