// Who may do what (docs/operations.md "Access and roles"): three roles, each allowing what the one
// below it allows, and the mapping of an identity provider's claim values to them.
export const ROLES = ['viewer', 'operator', 'admin'] as const;
export type Role = (typeof ROLES)[number];
/** What a route needs: a role, or nothing ('public': the page's files, /healthz). */
export type Need = Role | 'public';

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

export const isRole = (s: string): s is Role => (ROLES as readonly string[]).includes(s);

/** Whether `have` may do what needs `need`. */
export function allows(have: Role | null, need: Need): boolean {
  if (need === 'public') return true;
  return have !== null && RANK[have] >= RANK[need];
}

/** The highest of these roles (null for none). */
export function highest(roles: Iterable<Role>): Role | null {
  let best: Role | null = null;
  for (const r of roles) if (best === null || RANK[r] > RANK[best]) best = r;
  return best;
}

/**
 * msgx.oidc.role-map: `<IdP value>=<role>`, comma separated (e.g. `gw-viewers=viewer,gw-ops=operator`),
 * or semicolon separated when a value has commas (an AD group's DN: `CN=GW Ops,OU=Groups=operator;…`).
 * Empty: the claim's values are the role names themselves. Problems name the entry.
 */
export function parseRoleMap(text: string): { map: Map<string, Role> | null; problems: string[] } {
  const entries = text
    .split(text.includes(';') ? ';' : ',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (entries.length === 0) return { map: null, problems: [] };
  const map = new Map<string, Role>();
  const problems: string[] = [];
  for (const e of entries) {
    const at = e.lastIndexOf('=');
    const value = e.slice(0, at).trim();
    const role = e.slice(at + 1).trim();
    if (at <= 0 || !value) problems.push(`"${e}": expected <IdP value>=<role>`);
    else if (!isRole(role)) problems.push(`"${e}": ${role} is not a role (${ROLES.join(', ')})`);
    else map.set(value, role);
  }
  return { map, problems };
}

/** The role a set of claim values grants: the highest one mapped (null: none of them is). */
export function roleOf(values: readonly string[], map: Map<string, Role> | null): Role | null {
  return highest(values.flatMap((v) => (map ? (map.has(v) ? [map.get(v)!] : []) : isRole(v) ? [v] : [])));
}
