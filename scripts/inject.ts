// npm run inject -- [--renumber-seqn] [--schedules-first] <files…>   (--help: usage)
// Loads .xml files (one message each) and corpus-shaped SQL files into CMINMSGS, in order.
import { existsSync, statSync } from 'node:fs';
import { cliArgs, cliConfig, failureLine, reach, usageExit } from './args.ts';

const spec = {
  name: 'inject',
  flags: ['--renumber-seqn', '--schedules-first'],
  positional: 'words' as const,
  usage: `usage: npm run inject -- [--renumber-seqn] [--schedules-first] <file.xml|file.sql …>
  Inserts SIS messages into the inbox (CMINMSGS), in the order given: a .xml file is one
  message, a .sql file holds INSERT … VALUES ('<xml>', …) statements (the sample corpus's shape).
  --renumber-seqn   give the messages consecutive SEQN values (a corpus loaded twice is not
                    taken for duplicates)
  --schedules-first insert the schedule messages (TYPE SCHD) of all files first, then the
                    others, each in the order given (flight messages need their flights)
Every file is checked before anything is inserted. Exit 0 when every message was inserted,
1 when the inbox refused or did not answer, 2 on bad arguments, a bad setting or a file that
cannot be read.`,
};
const a = cliArgs(spec);
if (a.words.length === 0) usageExit(spec, 'give at least one file');
for (const f of a.words) {
  if (!existsSync(f)) usageExit(spec, `no such file: ${f}${f.includes('*') ? ' (the shell found nothing matching this pattern)' : ''}`);
  if (!statSync(f).isFile()) usageExit(spec, `not a file: ${f}`);
}
const { targets } = await import('../lib/core/config.ts');
const { createAodbPool } = await import('../lib/db/mysql.ts');
const { insertInboxRow } = await import('../lib/pipeline/inbox.ts');
const { messagesFromFile, renumberSeqn, schedulesFirst, seqnCounter } = await import('../lib/inject/files.ts');
const { formatLocalDatetime } = await import('../lib/sis/values.ts');

const renumber = a.flags.has('--renumber-seqn');
const batches: { file: string; messages: string[] }[] = [];
for (const f of a.words) {
  try {
    batches.push({ file: f, messages: messagesFromFile(f) });
  } catch (e) {
    usageExit(spec, `cannot read ${f}: ${(e as Error).message}`);
  }
}
const config = await cliConfig(spec.name);
await reach(spec.name, config, ['mariadb']);
const inbox = createAodbPool(targets(config).mariadb, { timeoutMs: config['msgx.io.timeout'] });
const next = seqnCounter();
const all = batches.flatMap((b) => b.messages);
const ordered = a.flags.has('--schedules-first') ? schedulesFirst(all) : all;
let inserted = 0;
try {
  for (const raw of ordered) {
    const body = renumber ? renumberSeqn(raw, next()) : raw;
    await insertInboxRow(inbox, { body, received: formatLocalDatetime(new Date(), config['msgx.airport.timezone']) });
    inserted++;
  }
  console.log(`inserted ${inserted} rows into CMINMSGS`);
} catch (e) {
  console.error(`inject: ${failureLine(e, 'mariadb')} (after ${inserted} rows)`);
  process.exitCode = 1;
} finally {
  await inbox.end();
}
