// Reads the third-party SIS sample corpus (never copied into the project): every
// `INSERT INTO aodbinterface.cminmsgs … VALUES ('<xml>', …)` statement of the files in
// ../shared/corpus/unisys-sis (relative to the project root). Labels are not trusted.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const CORPUS_DIR = path.resolve(fileURLToPath(new URL('../../', import.meta.url)), '../shared/corpus/unisys-sis');

export const corpusAvailable = () => existsSync(CORPUS_DIR);

export interface CorpusMessage {
  file: string;
  /** position inside the file, 0-based */
  index: number;
  /** the -- LABEL comment before the statement (unreliable) */
  label: string;
  xml: string;
}

/** All messages of all files, in file-name then statement order. */
export function corpusMessages(): CorpusMessage[] {
  const out: CorpusMessage[] = [];
  for (const file of readdirSync(CORPUS_DIR)
    .filter((f) => f.startsWith('INSERT_CMINMSGS_') && f.endsWith('.sql'))
    .sort()) {
    const text = readFileSync(path.join(CORPUS_DIR, file), 'utf8');
    const re = /(?:--\s*([^\n]*)\n\s*)?INSERT INTO\s+aodbinterface\.cminmsgs\s*\([^)]*\)\s*VALUES\s*\('((?:[^']|'')*)'/gi;
    let m: RegExpExecArray | null;
    let index = 0;
    while ((m = re.exec(text))) out.push({ file, index: index++, label: (m[1] ?? '').trim(), xml: m[2].replace(/''/g, "'") });
  }
  return out;
}
