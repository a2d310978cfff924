// The one table of who may call what: every HTTP route of every process, with the role it needs
// (docs/operations.md "Access and roles"). The api refuses to register a route missing here
// (lib/api/access.ts), the status server of every other process serves only routes named here,
// and test/unit/access/route-table.test.ts walks every registered route against it. A HEAD
// request needs what its GET needs.
import { allows, type Need, type Role } from './roles.ts';

export const ROUTE_ROLES = {
  // every process
  'GET /healthz': 'public', // ok and the condition names; the reasons only for a viewer (or an anonymous read, below)
  'GET /metrics': 'viewer',
  // the ops console's page and files (no data), and what it needs to sign in
  'GET /ops': 'public',
  'GET /ops/console.css': 'public',
  'GET /ops/js/:file': 'public',
  'GET /ops/config': 'public',
  'GET /ops/me': 'viewer',
  // reads
  'GET /openapi.json': 'viewer',
  'GET /flights/:flid': 'viewer',
  'GET /all/flights': 'viewer',
  'GET /flights/:flid/timeline': 'viewer',
  'GET /reference/:rtype': 'viewer',
  'GET /reference/:rtype/:rkey': 'viewer',
  'GET /resources/status': 'viewer',
  'GET /requests': 'viewer',
  'GET /requests/:id': 'viewer',
  'GET /ops/summary': 'viewer',
  'GET /ops/messages': 'viewer',
  'GET /ops/messages/:id': 'viewer',
  'GET /ops/states': 'viewer',
  'GET /ops/list': 'viewer',
  'GET /ops/last-hour': 'viewer',
  'GET /ops/dispatch/dead': 'viewer',
  // operator actions
  'POST /ops/replay': 'operator',
  'POST /ops/backfill-resume': 'operator',
  'POST /ops/dispatch-replay': 'operator',
  'POST /ops/dispatch-skip': 'operator',
  'POST /requests': 'operator',
  // everything else
  'POST /cminmsgs/send': 'admin',
} as const satisfies Record<string, Need>;

export type RouteKey = keyof typeof ROUTE_ROLES;

/** The key of a route in the table: `GET /flights/:flid` (HEAD counts as GET). */
export const routeKey = (method: string, url: string): string => `${method === 'HEAD' ? 'GET' : method} ${url}`;

/** What a route needs; undefined for a route the table does not name. */
export function needOf(method: string, url: string): Need | undefined {
  return (ROUTE_ROLES as Record<string, Need>)[routeKey(method, url)];
}

/** The routes a role may call (the console offers only these actions). */
export function routesFor(role: Role | null): string[] {
  return Object.entries(ROUTE_ROLES as Record<string, Need>)
    .filter(([, need]) => allows(role, need))
    .map(([k]) => k);
}

/** The reads msgx.http.anonymous-reads may open to anonymous callers: the viewer GET routes, and /healthz's reasons. */
export const OPENABLE_READS: readonly string[] = [
  '/healthz',
  ...Object.entries(ROUTE_ROLES as Record<string, Need>)
    .filter(([k, need]) => need === 'viewer' && k.startsWith('GET ') && k !== 'GET /ops/me')
    .map(([k]) => k.slice(4)),
];

/** msgx.http.anonymous-reads → the set of opened paths; problems name what is not an openable read. */
export function parseAnonymousReads(list: readonly string[]): { open: Set<string>; problems: string[] } {
  const open = new Set<string>();
  const problems: string[] = [];
  for (const p of list) {
    if (OPENABLE_READS.includes(p)) open.add(p);
    else problems.push(`${p} is not a read route that can be opened (one of ${OPENABLE_READS.join(', ')})`);
  }
  return { open, problems };
}
