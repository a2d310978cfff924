// Bearer JWTs from the airport's identity provider (OpenID Connect), checked with jose (no crypto
// of our own): the issuer's discovery document names its JWKS; keys are cached, fetched again
// when a token names a key not in the cache (at most once per JWKS_COOLDOWN_MS: a flood of
// unknown `kid`s cannot make us hammer the provider), and every JWKS_MAX_AGE_MS. A token passes
// with a signature by one of those keys in an allowed (asymmetric) algorithm, `iss` = the issuer,
// `aud` containing the audience, and `exp` / `nbf` within the clock skew; `alg: none` and an HMAC
// signed with a public key are refused by the algorithm allowlist before any key is looked at.
// Loaded only by a process that is configured with an issuer and sees a JWT.
import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../core/clock.ts';
import { roleOf, type Role } from './roles.ts';

export const JWKS_COOLDOWN_MS = 10_000;
/** The signature algorithms accepted: asymmetric only (what Keycloak, Entra ID and ADFS sign with); never `none` or an HMAC. */
export const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
export const JWKS_MAX_AGE_MS = 10 * 60_000;
/** After a failed discovery, the next try waits at least this long. */
const DISCOVERY_RETRY_MS = 5000;

export interface OidcSettings {
  issuer: string;
  audience: string;
  /** The claim holding the roles (`roles`, `groups`, `realm_access.roles`, a URI). */
  roleClaim: string;
  roleMap: Map<string, Role> | null;
  clockSkewMs: number;
  timeoutMs: number;
}

/** What the console and the verifier need of the issuer's discovery document. */
export interface Discovery {
  issuer: string;
  jwks_uri: string;
  authorization_endpoint: string;
  token_endpoint: string;
  end_session_endpoint?: string;
}

export interface Verified {
  subject: string;
  name: string | null;
  role: Role | null;
}

/** A refusal: 401 (the token is not good) or 503 (the provider could not be asked). */
export class TokenRefused extends Error {
  readonly status: 401 | 503;
  constructor(status: 401 | 503, message: string) {
    super(message);
    this.status = status;
  }
}

const NAME_CLAIMS = ['name', 'preferred_username', 'email', 'upn', 'unique_name'];

/** A claim by its name, or else by its dotted path (`realm_access.roles`); a string or a list of strings. */
export function claimValues(payload: Record<string, unknown>, claim: string): string[] {
  let v: unknown = payload[claim];
  if (v === undefined && claim.includes('.')) v = claim.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), payload);
  if (typeof v === 'string') return [v];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** Who the token names: `sub`, a readable name (name, preferred_username, e-mail, upn), the role its claim maps to. */
export function identityOf(payload: JWTPayload, s: Pick<OidcSettings, 'roleClaim' | 'roleMap'>): Verified {
  const p = payload as Record<string, unknown>;
  const name = NAME_CLAIMS.map((c) => p[c]).find((v): v is string => typeof v === 'string' && v !== '') ?? null;
  return { subject: String(payload.sub ?? ''), name, role: roleOf(claimValues(p, s.roleClaim), s.roleMap) };
}

function refusal(e: unknown): TokenRefused {
  const code = (e as { code?: string }).code;
  if (e instanceof errors.JWTExpired) return new TokenRefused(401, 'the token has expired');
  if (e instanceof errors.JWTClaimValidationFailed) {
    const why: Record<string, string> = { aud: 'the token is for another audience', iss: 'the token is from another issuer', nbf: 'the token is not valid yet', sub: 'the token names no subject' };
    return new TokenRefused(401, why[e.claim] ?? `the token's ${e.claim} claim is not accepted`);
  }
  if (e instanceof errors.JWKSNoMatchingKey) return new TokenRefused(401, "the token's signing key (kid) is not among the issuer's keys");
  if (e instanceof errors.JOSEAlgNotAllowed) return new TokenRefused(401, "the token's algorithm is not allowed");
  if (e instanceof errors.JWSSignatureVerificationFailed) return new TokenRefused(401, 'the token signature does not verify');
  if (e instanceof errors.JWKSTimeout || code === 'ERR_JOSE_GENERIC' || e instanceof TypeError || (e as Error).name === 'TimeoutError')
    return new TokenRefused(503, 'the identity provider could not be asked for its keys; try again');
  return new TokenRefused(401, 'not a valid token');
}

export class OidcVerifier {
  private discovered: Promise<Discovery> | undefined;
  private failedAt = -Infinity;
  private jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  private readonly s: OidcSettings;
  private readonly clock: Clock;

  constructor(s: OidcSettings, clock: Clock) {
    this.s = s;
    this.clock = clock;
  }

  /** The discovery document (fetched once; a failure is tried again after DISCOVERY_RETRY_MS). */
  discovery(): Promise<Discovery> {
    const now = this.clock.now().getTime();
    if (!this.discovered && now - this.failedAt < DISCOVERY_RETRY_MS) return Promise.reject(new TokenRefused(503, 'the identity provider did not answer its discovery; try again'));
    this.discovered ??= this.fetchDiscovery().catch((e: unknown) => {
      this.discovered = undefined;
      this.failedAt = this.clock.now().getTime();
      throw e instanceof TokenRefused ? e : new TokenRefused(503, `the identity provider did not answer its discovery (${(e as Error).message}); try again`);
    });
    return this.discovered;
  }

  private async fetchDiscovery(): Promise<Discovery> {
    const url = `${this.s.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const r = await fetch(url, { signal: AbortSignal.timeout(this.s.timeoutMs), redirect: 'error', headers: { accept: 'application/json' } });
    if (!r.ok) throw new Error(`${url} answered ${r.status}`);
    const d = (await r.json()) as Partial<Discovery>;
    if (d.issuer !== this.s.issuer) throw new TokenRefused(503, `the discovery document names the issuer ${JSON.stringify(d.issuer)}, not msgx.oidc.issuer ${this.s.issuer}`);
    for (const k of ['jwks_uri', 'authorization_endpoint', 'token_endpoint'] as const) if (typeof d[k] !== 'string') throw new Error(`the discovery document has no ${k}`);
    return d as Discovery;
  }

  /** The token's subject, name and role; throws TokenRefused. */
  async verify(token: string): Promise<Verified> {
    const d = await this.discovery();
    this.jwks ??= createRemoteJWKSet(new URL(d.jwks_uri), { timeoutDuration: this.s.timeoutMs, cooldownDuration: JWKS_COOLDOWN_MS, cacheMaxAge: JWKS_MAX_AGE_MS });
    try {
      const { payload } = await jwtVerify(token, this.jwks, {
        issuer: this.s.issuer,
        audience: this.s.audience,
        algorithms: ALGORITHMS,
        clockTolerance: Math.round(this.s.clockSkewMs / 1000),
        currentDate: this.clock.now(),
        requiredClaims: ['sub', 'exp'],
      });
      return identityOf(payload, this.s);
    } catch (e) {
      throw refusal(e);
    }
  }
}
