// The third-party SIS corpus, read from ../shared (never copied into the repository).
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { messagesFromFile } from '../../lib/inject/files.ts';

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
