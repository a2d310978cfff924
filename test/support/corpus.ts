// The third-party SIS corpus, read from ../shared (never copied into the repository).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { messagesFromFile } from '../../lib/inject/files.ts';
import { decodeEnvelope } from '../../lib/sis/envelope.ts';

export const CORPUS_DIR = resolve(process.env.MSGX_CORPUS_DIR ?? join(import.meta.dirname, '../../../shared/corpus/unisys-sis'));
export const corpusPresent = existsSync(CORPUS_DIR);

if (!corpusPresent) console.warn(`SKIPPED(corpus-absent): ${CORPUS_DIR} does not exist; corpus tests do not run`);

export interface CorpusMessage {
  file: string;
  xml: string;
}

/** Every message of every INSERT_CMINMSGS_*.sql file, files in name order, messages in file order. */
export function corpusMessages(filter: (file: string) => boolean = () => true): CorpusMessage[] {
  if (!corpusPresent) return [];
  return readdirSync(CORPUS_DIR)
    .filter((f) => f.startsWith('INSERT_CMINMSGS_') && f.endsWith('.sql') && filter(f))
    .sort()
    .flatMap((file) => messagesFromFile(join(CORPUS_DIR, file)).map((xml) => ({ file, xml })));
}

/** Hand-written fixture (examples/corpus-flights.xml, also the README's): an ADFT creating the flights the corpus FLOPs address besides 15 and 16. */
export const CORPUS_ADFT_FIXTURE = readFileSync(join(import.meta.dirname, '../../examples/corpus-flights.xml'), 'utf8');

/** The corpus's flight messages: the SCHD DNLD(s), the FLOPs other than FDEL, and the FDEL(s), in file order. */
/** TYPE/STYP of a raw message ('undecodable' when its envelope does not decode). */
export function corpusKind(xml: string): string {
  try {
    const e = decodeEnvelope(xml);
    return `${e.type}/${e.styp}`;
  } catch {
    return 'undecodable';
  }
}

export function flightCorpus(): { schd: CorpusMessage[]; flops: CorpusMessage[]; fdel: CorpusMessage[] } {
  const all = corpusMessages();
  const kindOf = corpusKind;
  return {
    schd: all.filter((m) => kindOf(m.xml) === 'SCHD/DNLD'),
    flops: all.filter((m) => m.xml.includes('<TYPE>FLOP</TYPE>') && kindOf(m.xml) !== 'FLOP/FDEL'),
    fdel: all.filter((m) => kindOf(m.xml) === 'FLOP/FDEL'),
  };
}
