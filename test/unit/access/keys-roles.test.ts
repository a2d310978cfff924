// API keys files, role mapping and the claims of a token: pure functions, plain tables.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hashKey, KEY_PREFIX, keyLine, KeyStore, newKey, parseKeys } from '../../../lib/access/keys.ts';
import { claimValues, identityOf } from '../../../lib/access/oidc.ts';
import { allows, parseRoleMap, roleOf } from '../../../lib/access/roles.ts';
import { parseAnonymousReads } from '../../../lib/access/routes.ts';

const H = hashKey('msgxk_example');

describe('the keys file', () => {
  it('one key a line, comments and blank lines allowed; several lines may share a name (rotation)', () => {
    const r = parseKeys(`# service accounts\n\nprometheus viewer ${H}   # scrapes /metrics\nprometheus viewer ${hashKey('msgxk_next')}\nops-script operator ${'A'.repeat(64)}\n`, 'keys');
    expect(r.problems).toEqual([]);
    expect([...r.keys.values()]).toEqual([
      { name: 'prometheus', role: 'viewer' },
      { name: 'prometheus', role: 'viewer' },
      { name: 'ops-script', role: 'operator' },
    ]);
    expect(r.keys.has('a'.repeat(64))).toBe(true); // hex in either case
  });

  it.each([
    [`prometheus ${H}`, 'keys:1: expected "<name> <role> <sha256 hex>", found 2 word(s)'],
    [`prometheus root ${H}`, 'keys:1: "root" is not a role (viewer, operator, admin)'],
    ['prometheus viewer msgxk_the-key-itself', 'keys:1: the third word is not a SHA-256 in hex (64 characters; the key itself never goes in this file)'],
    [`-x viewer ${H}`, 'keys:1: the name "-x" is not 1-64 letters, digits, . _ @ -'],
    [`a viewer ${H}\nb viewer ${H}`, 'keys:2: the same key hash is listed twice'],
  ])('a bad line is named with the file and the line: %s', (text, problem) => {
    expect(parseKeys(text, 'keys').problems).toEqual([problem]);
  });

  it('a new key has the prefix and 256 random bits; its line is the hash `sha256sum` prints', () => {
    const k = newKey();
    expect(k.startsWith(KEY_PREFIX)).toBe(true);
    expect(k.length).toBe(KEY_PREFIX.length + 43);
    expect(newKey()).not.toBe(k);
    expect(keyLine('prometheus', 'viewer', 'msgxk_example')).toBe(`prometheus viewer ${H}`);
    expect(H).toBe('f46dd28b3234cb7e3268cf059c82ff7373a7299c35458d34e532f316a54cee1e'); // printf %s msgxk_example | sha256sum
  });

  it('a changed file is read again; a bad one is refused whole and the keys in force stay', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'msgx-keys-')), 'keys');
    writeFileSync(file, `old viewer ${hashKey('msgxk_old')}\n`);
    const store = new KeyStore(file);
    expect(store.find('msgxk_old')).toEqual({ name: 'old', role: 'viewer' });
    expect(await store.reload()).toBe('unchanged');
    writeFileSync(file, `old viewer ${hashKey('msgxk_old')}\nnew operator ${hashKey('msgxk_new')}\n`);
    expect(await store.reload()).toBe('reloaded');
    expect(store.find('msgxk_new')).toEqual({ name: 'new', role: 'operator' });
    writeFileSync(file, 'new operator not-a-hash\n');
    expect(await store.reload()).toEqual({ problems: [`${file}:1: the third word is not a SHA-256 in hex (64 characters; the key itself never goes in this file)`] });
    expect(store.find('msgxk_old')).toEqual({ name: 'old', role: 'viewer' });
    expect(store.find('msgxk_new')).toEqual({ name: 'new', role: 'operator' });
    expect(() => new KeyStore(`${file}.missing`)).toThrow(/MSGX_API_KEYS_FILE=.*cannot be read \(ENOENT\)/);
    writeFileSync(file, 'x viewer y\n');
    expect(() => new KeyStore(file)).toThrow(/MSGX_API_KEYS_FILE: .*keys:1: the third word/);
  });
});

describe('roles', () => {
  it('each role allows what the one below allows', () => {
    expect(allows('viewer', 'viewer')).toBe(true);
    expect(allows('viewer', 'operator')).toBe(false);
    expect(allows('operator', 'viewer')).toBe(true);
    expect(allows('admin', 'operator')).toBe(true);
    expect(allows(null, 'viewer')).toBe(false);
    expect(allows(null, 'public')).toBe(true);
  });

  it("the IdP's values map to roles; the highest wins; no map: the values are the role names", () => {
    const { map, problems } = parseRoleMap('gw-viewers=viewer, gw-operators=operator');
    expect(problems).toEqual([]);
    expect(roleOf(['gw-viewers', 'gw-operators', 'staff'], map)).toBe('operator');
    expect(roleOf(['staff'], map)).toBe(null);
    const ad = parseRoleMap('CN=GW Admins,OU=Groups,DC=airport=admin; CN=GW Viewers,OU=Groups,DC=airport=viewer'); // AD group DNs: semicolons
    expect(ad.problems).toEqual([]);
    expect(roleOf(['CN=GW Admins,OU=Groups,DC=airport'], ad.map)).toBe('admin');
    expect(roleOf(['viewer', 'admin'], null)).toBe('admin');
    expect(parseRoleMap('a=root,b').problems).toEqual(['"a=root": root is not a role (viewer, operator, admin)', '"b": expected <IdP value>=<role>']);
  });

  it('the role claim by name, by dotted path (Keycloak), or a URI with dots (ADFS); a string or a list', () => {
    const p = { roles: ['a'], realm_access: { roles: ['b', 7] }, 'http://schemas.microsoft.com/ws/2008/06/identity/claims/role': 'c' };
    expect(claimValues(p, 'roles')).toEqual(['a']);
    expect(claimValues(p, 'realm_access.roles')).toEqual(['b']);
    expect(claimValues(p, 'http://schemas.microsoft.com/ws/2008/06/identity/claims/role')).toEqual(['c']);
    expect(claimValues(p, 'groups')).toEqual([]);
    expect(identityOf({ sub: 's1', preferred_username: 'alice', roles: 'gw-operators' }, { roleClaim: 'roles', roleMap: parseRoleMap('gw-operators=operator').map })).toEqual({
      subject: 's1',
      name: 'alice',
      role: 'operator',
    });
  });

  it('anonymous reads: only read routes of the table, and /healthz', () => {
    expect(parseAnonymousReads(['/all/flights', '/healthz', '/metrics']).problems).toEqual([]);
    expect(parseAnonymousReads(['/ops/replay', '/nope']).problems).toHaveLength(2);
  });
});
