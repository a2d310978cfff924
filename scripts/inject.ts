// npm run inject -- [--renumber-seqn] <files…>
// Loads .xml files (one message each) and corpus-shaped SQL files into CMINMSGS, in order.
import { loadConfig } from '../lib/core/config.ts';
import { createAodbPool } from '../lib/db/mysql.ts';
import { insertInboxRow } from '../lib/pipeline/inbox.ts';
import { messagesFromFile, renumberSeqn, seqnCounter } from '../lib/inject/files.ts';
import { formatLocalDatetime } from '../lib/sis/values.ts';

const args = process.argv.slice(2);
const renumber = args.includes('--renumber-seqn');
const files = args.filter((a) => !a.startsWith('--'));
if (files.length === 0) {
  console.error('usage: npm run inject -- [--renumber-seqn] <file.xml|file.sql …>');
  process.exit(2);
}
const config = loadConfig();
const inbox = createAodbPool(config.INBOX_URL, { timeoutMs: config['msgx.io.timeout'] });
const next = seqnCounter();
let inserted = 0;
try {
  for (const f of files) {
    for (const raw of messagesFromFile(f)) {
      const body = renumber ? renumberSeqn(raw, next()) : raw;
      await insertInboxRow(inbox, { body, received: formatLocalDatetime(new Date(), config['msgx.airport.timezone']) });
      inserted++;
    }
  }
  console.log(`inserted ${inserted} rows into CMINMSGS`);
} finally {
  await inbox.end();
}
