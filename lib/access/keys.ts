// Service accounts: named API keys with a role, from MSGX_API_KEYS_FILE (docs/operations.md
// "Access and roles"). The file holds only each key's SHA-256, one line per key:
//   <name> <role> <sha256 hex of the key>      # comments and blank lines allowed
// Several lines may share a name (the old and the new key while one is rotated). A client sends
// `Authorization: Bearer msgxk_…`. The file is read again whenever its text changes (checked
// every RELOAD_EVERY_MS), so adding and then removing a line rotates a key without a restart; a
// file with a bad line is refused whole: at start the process stops (exit 2), later the keys
// already loaded stay in force and the problem is reported.
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { isRole, ROLES, type Role } from './roles.ts';

/** Every key starts so: the api tells a key from a JWT by it, and a leaked one is easy to search for. */
export const KEY_PREFIX = 'msgxk_';
export const RELOAD_EVERY_MS = 1000;

export interface ApiKey {
  name: string;
  role: Role;
}

/** A fresh key: the prefix and 32 random bytes, base64url. */
export const newKey = (): string => KEY_PREFIX + randomBytes(32).toString('base64url');
/** What the keys file holds of a key: the SHA-256 of its text, hex (as `printf %s KEY | sha256sum` prints it). */
export const hashKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');
/** The keys file's line of a key. */
export const keyLine = (name: string, role: Role, key: string): string => `${name} ${role} ${hashKey(key)}`;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** The keys of a file's text: by hash. Problems name the file and the line; any problem refuses the whole file. */
export function parseKeys(text: string, file: string): { keys: Map<string, ApiKey>; problems: string[] } {
  const keys = new Map<string, ApiKey>();
  const problems: string[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const at = `${file}:${i + 1}`;
    const words = line.split(/\s+/);
    if (words.length !== 3) return void problems.push(`${at}: expected "<name> <role> <sha256 hex>", found ${words.length} word(s)`);
    const [name, role, hash] = words;
    if (!NAME.test(name)) problems.push(`${at}: the name ${JSON.stringify(name.slice(0, 70))} is not 1-64 letters, digits, . _ @ -`);
    else if (!isRole(role)) problems.push(`${at}: ${JSON.stringify(role.slice(0, 20))} is not a role (${ROLES.join(', ')})`);
    else if (!/^[0-9a-fA-F]{64}$/.test(hash)) problems.push(`${at}: the third word is not a SHA-256 in hex (64 characters; the key itself never goes in this file)`);
    else if (keys.has(hash.toLowerCase())) problems.push(`${at}: the same key hash is listed twice`);
    else keys.set(hash.toLowerCase(), { name, role });
  });
  return { keys, problems };
}

export class KeysFileError extends Error {}

/** The keys in force, read from their file at start and again whenever it changes. */
export class KeyStore {
  private keys: Map<string, ApiKey>;
  private text: string;
  private timer: NodeJS.Timeout | undefined;
  readonly file: string;

  /** Reads the file; a bad or unreadable file throws KeysFileError (the process does not start). */
  constructor(file: string) {
    this.file = file;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (e) {
      throw new KeysFileError(`MSGX_API_KEYS_FILE=${file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    const r = parseKeys(text, file);
    if (r.problems.length) throw new KeysFileError(`MSGX_API_KEYS_FILE: ${r.problems.join('; ')}`);
    this.keys = r.keys;
    this.text = text;
  }

  get size(): number {
    return this.keys.size;
  }

  /** The key's name and role, or undefined. */
  find(key: string): ApiKey | undefined {
    return this.keys.get(hashKey(key));
  }

  /** Read the file again if its text changed: 'reloaded', 'unchanged', or the problems (the keys in force stay). */
  async reload(): Promise<'reloaded' | 'unchanged' | { problems: string[] }> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (e) {
      return { problems: [`${this.file}: cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`] };
    }
    if (text === this.text) return 'unchanged';
    const r = parseKeys(text, this.file);
    if (r.problems.length) return { problems: r.problems };
    this.keys = r.keys;
    this.text = text;
    return 'reloaded';
  }

  /** Checks the file every RELOAD_EVERY_MS; `report` hears of each change or refusal (once per distinct text). */
  watch(report: (r: { reloaded: number } | { problems: string[] }) => void, everyMs = RELOAD_EVERY_MS): void {
    let refused = '';
    const tick = async () => {
      const r = await this.reload();
      if (r === 'unchanged') return;
      if (r === 'reloaded') {
        refused = '';
        return report({ reloaded: this.keys.size });
      }
      const said = r.problems.join('; ');
      if (said !== refused) report(r);
      refused = said;
    };
    this.timer = setInterval(() => void tick(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
