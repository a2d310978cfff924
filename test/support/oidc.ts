// A real OpenID provider for the access tests: oidc-provider (a certified implementation), run in
// this test process on a port of its own. It signs JWT access tokens for the gateway's audience
// with the keys it is given, issues them through the real authorization-code + PKCE flow (its
// development login form: any login, any password; the login is the subject) and through client
// credentials (a service), and counts the requests for its JWKS. Subjects and clients whose name
// says viewer / operator / admin get the IdP group gw-<role>s in their `groups` claim; `nobody`
// gets none. Nothing here is the gateway's code: the gateway only sees tokens and the discovery.
import { createHash, randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { errors } from 'oidc-provider';
import { freePort } from './ports.ts';

export const AUDIENCE = 'urn:msgx:api';
export const OTHER_AUDIENCE = 'urn:other:api';
export const ROLE_MAP = 'gw-viewers=viewer,gw-operators=operator,gw-admins=admin';
export const CONSOLE_CLIENT = 'msgx-console';
export const SERVICES = ['svc-viewer', 'svc-operator', 'svc-admin', 'svc-nobody', 'svc-short'] as const;
const SECRET = 'a-client-secret-for-tests-only-0123456789';

interface Grant {
  addOIDCScope(s: string): void;
  addResourceScope(r: string, s: string): void;
  save(): Promise<string>;
}
interface GrantContext {
  oidc: {
    result?: { consent?: { grantId?: string } };
    session?: { accountId: string; grantIdFor(clientId: string): string | undefined };
    client?: { clientId: string };
    provider: { Grant: { find(id: string): Promise<Grant>; new (o: { clientId: string; accountId: string }): Grant } };
  };
}

/**
 * The api's environment as in production, signing in with this provider: development mode off,
 * no shared token, reads closed, an empty keys file (`keysFile`), the provider's groups mapped to roles.
 */
export function productionApiEnv(idp: TestIdp, keysFile: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    MSGX_DEV_MODE: 'false',
    MSGX_API_TOKEN: '',
    MSGX_HTTP_ANONYMOUS_READS: '',
    MSGX_API_KEYS_FILE: keysFile,
    MSGX_OIDC_ISSUER: idp.issuer,
    MSGX_OIDC_AUDIENCE: AUDIENCE,
    MSGX_OIDC_ROLE_CLAIM: 'groups',
    MSGX_OIDC_ROLE_MAP: ROLE_MAP,
    ...extra,
  };
}

/** A signing key pair: the private JWK the provider signs with (its public half is what the JWKS serves). */
export async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

const groupsOf = (name: string) => (['viewer', 'operator', 'admin'] as const).filter((r) => name.includes(r)).map((r) => `gw-${r}s`);
const display = (login: string) => `${login[0].toUpperCase()}${login.slice(1).replace(/-/g, ' ')}`;

export interface TestIdp {
  issuer: string;
  port: number;
  /** Requests for the JWKS since start. */
  jwksFetches(): number;
  /** An access token of a service (client credentials): for the gateway's audience unless `resource` says else. */
  serviceToken(client: (typeof SERVICES)[number], resource?: string): Promise<string>;
  /** A person's access token through the authorization-code + PKCE flow (the provider's login form, driven over HTTP). */
  userToken(login: string, redirectUri: string): Promise<string>;
  stop(): Promise<void>;
}

/** The provider on `port` (a free one if not given), publishing `keys` (the first signs), its issuer http://127.0.0.1:<port>. */
export async function startIdp(o: { keys: JWK[]; port?: number; consoleOrigins?: string[]; shortTtlSeconds?: number }): Promise<TestIdp> {
  const port = o.port ?? (await freePort());
  const issuer = `http://127.0.0.1:${port}`;
  const signer = o.keys[0].kid!;
  const redirects = (o.consoleOrigins ?? []).map((x) => `${x}/ops`);
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CONSOLE_CLIENT,
        token_endpoint_auth_method: 'none',
        application_type: 'web',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: redirects.length ? redirects : ['http://127.0.0.1/ops'],
        post_logout_redirect_uris: redirects.length ? redirects : ['http://127.0.0.1/ops'],
      },
      ...SERVICES.map((client_id) => ({
        client_id,
        client_secret: SECRET,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_post',
      })),
    ],
    jwks: { keys: o.keys },
    findAccount: async (_ctx: unknown, id: string) => ({ accountId: id, claims: async () => ({ sub: id, name: display(id), email: `${id}@airport.example` }) }),
    claims: { openid: ['sub'], profile: ['name'], email: ['email'] },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => AUDIENCE,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, resource: string, client: { clientId: string }) => {
          if (resource !== AUDIENCE && resource !== OTHER_AUDIENCE) throw new errors.InvalidTarget();
          const ttl = client.clientId === 'svc-short' ? (o.shortTtlSeconds ?? 2) : 600;
          return { scope: 'api', audience: resource, accessTokenFormat: 'jwt', accessTokenTTL: ttl, jwt: { sign: { alg: 'RS256', kid: signer } } };
        },
      },
    },
    // The person's roles and name in the access token, as an IdP's claim mapping would put them.
    extraTokenClaims: async (_ctx: unknown, token: { accountId?: string; clientId?: string }) => {
      const who = token.accountId ?? token.clientId ?? '';
      return { groups: groupsOf(who), name: display(who) };
    },
    // First-party console: no consent page (the grant is made as the person signs in).
    loadExistingGrant: async (ctx: GrantContext) => {
      const id = ctx.oidc.result?.consent?.grantId || ctx.oidc.session!.grantIdFor(ctx.oidc.client!.clientId);
      if (id) return ctx.oidc.provider.Grant.find(id);
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId });
      grant.addOIDCScope('openid profile email');
      grant.addResourceScope(AUDIENCE, 'api');
      await grant.save();
      return grant;
    },
    pkce: { required: () => true },
    cookies: { keys: [randomBytes(16).toString('hex')] },
  });
  let fetches = 0;
  provider.use(async (ctx: { path: string }, next: () => Promise<void>) => {
    if (ctx.path === '/jwks') fetches++;
    await next();
  });
  const server: Server = await new Promise((resolve) => {
    const s = provider.listen(port, '127.0.0.1', () => resolve(s));
  });

  const form = async (path: string, body: Record<string, string>, cookies = '') => {
    const r = await fetch(`${issuer}${path}`, { method: 'POST', body: new URLSearchParams(body), headers: { cookie: cookies }, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
    return r;
  };
  return {
    issuer,
    port,
    jwksFetches: () => fetches,
    serviceToken: async (client, resource = AUDIENCE) => {
      const r = await form('/token', { grant_type: 'client_credentials', client_id: client, client_secret: SECRET, resource, scope: 'api' });
      const j = (await r.json()) as { access_token?: string; error_description?: string };
      if (!j.access_token) throw new Error(`no token for ${client}: ${j.error_description}`);
      return j.access_token;
    },
    userToken: async (login, redirectUri) => {
      const jar = new Map<string, string>();
      const keep = (r: Response) => {
        for (const c of r.headers.getSetCookie()) {
          const [pair] = c.split(';');
          const at = pair.indexOf('=');
          jar.set(pair.slice(0, at), pair.slice(at + 1));
        }
        return r;
      };
      const cookies = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const go = async (url: string) => keep(await fetch(new URL(url, issuer), { headers: { cookie: cookies() }, redirect: 'manual', signal: AbortSignal.timeout(10_000) }));
      const verifier = randomBytes(32).toString('base64url');
      const challenge = createHash('sha256').update(verifier).digest('base64url');
      const q = new URLSearchParams({
        response_type: 'code',
        client_id: CONSOLE_CLIENT,
        redirect_uri: redirectUri,
        scope: 'openid profile email',
        state: 's',
        code_challenge: challenge,
        code_challenge_method: 'S256',
      });
      let r = await go(`/auth?${q}`);
      const interaction = r.headers.get('location')!;
      r = keep(await form(new URL(interaction, issuer).pathname, { prompt: 'login', login, password: 'any' }, cookies()));
      for (let i = 0; i < 5 && r.status >= 300 && r.status < 400 && !r.headers.get('location')!.startsWith(redirectUri); i++) r = await go(r.headers.get('location')!);
      const code = new URL(r.headers.get('location') ?? '', issuer).searchParams.get('code');
      if (!code) throw new Error(`no code for ${login}: ${r.status} ${await r.text()}`);
      const t = (await (
        await form('/token', { grant_type: 'authorization_code', client_id: CONSOLE_CLIENT, code, redirect_uri: redirectUri, code_verifier: verifier, resource: AUDIENCE })
      ).json()) as {
        access_token?: string;
        error_description?: string;
      };
      if (!t.access_token) throw new Error(`no token for ${login}: ${t.error_description}`);
      return t.access_token;
    },
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
