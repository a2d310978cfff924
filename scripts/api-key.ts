// npm run api-key -- new <name> <role> --out <file>   (--help: usage)
// A service account's API key (docs/operations.md "Access and roles"): the key to a file only its
// owner reads, the keys file's line (its SHA-256) on stdout. Opens no connection.
import { writeFileSync } from 'node:fs';
import { cliArgs, usageExit } from './args.ts';

const SPEC = {
  name: 'api-key',
  valued: ['--out'],
  positional: 'words' as const,
  usage: `usage: npm run api-key -- new <name> <role> --out <file>
  Makes a new random API key (msgxk_...) for the service account <name> with <role> (viewer,
  operator or admin), writes it to <file> (mode 600; an existing file is refused) and prints only
  the line to append to MSGX_API_KEYS_FILE: "<name> <role> <sha256 of the key>", never the key.
  The same line by hand: echo "<name> <role> $(sha256sum < <file> | cut -d' ' -f1)" (the file holds the key
  without a newline; for a key in a variable: printf %s "$KEY" | sha256sum)
  Rotation: append the new line, move the client to the new key, delete the old line; every
  process reads the file again within a second of a change, no restart.`,
};

const args = cliArgs(SPEC);
const [verb, name, role] = args.words;
const out = args.options['--out'];
if (verb !== 'new' || args.words.length !== 3) usageExit(SPEC, 'expected: new <name> <role>');
if (!out) usageExit(SPEC, '--out <file> is required (where the key is written)');
const { keyLine, newKey, parseKeys } = await import('../lib/access/keys.ts');
const { isRole } = await import('../lib/access/roles.ts');
if (!isRole(role)) usageExit(SPEC, `${role} is not a role (viewer, operator, admin)`);
const key = newKey();
const line = keyLine(name, role, key);
const problems = parseKeys(line, 'the new line').problems;
if (problems.length) usageExit(SPEC, problems.join('; '));
try {
  writeFileSync(out, key, { mode: 0o600, flag: 'wx' }); // no newline: `sha256sum < file` prints the line's hash
} catch (e) {
  console.error(`api-key: cannot write ${out} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): nothing made`);
  process.exit(2);
}
console.log(line);
