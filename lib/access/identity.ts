// Who is calling: the Authorization header resolved to a principal (docs/operations.md "Access and
// roles"). `Bearer msgxk_…` is an API key (keys.ts), a token with two dots a JWT of the identity
// provider (oidc.ts), and in development mode on loopback only, MSGX_API_TOKEN (empty: `dev`) the
// shared token. Compared as SHA-256 digests with timingSafeEqual, so neither the shared token's
// content nor its length leaks through timing; keys are found by their hash.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../core/clock.ts';
import { KEY_PREFIX, type KeyStore } from './keys.ts';
import type { Discovery, OidcSettings, OidcVerifier } from './oidc.ts';
import type { Role } from './roles.ts';

export interface Principal {
  /** How the caller proved who it is. */
  via: 'oidc' | 'key' | 'dev';
  /** The token's `sub`, the key's name, or `dev`. */
  subject: string;
  /** The token's name or e-mail claim (null for keys and the shared token). */
  name: string | null;
  /** null: authenticated, but the identity provider gave no role this gateway knows. */
  role: Role | null;
}

export type Identified = { ok: true; principal: Principal | null } | { ok: false; status: 401 | 503; reason: string };

export interface IdentitySources {
  keys?: KeyStore;
  /** Settings of the identity provider; the verifier module is loaded at the first JWT. */
  oidc?: OidcSettings;
  /** Development mode only: the shared token (its principal is an admin). */
  devToken?: string;
  clock: Clock;
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$/;

/** Resolves Authorization headers; anonymous (no header) → principal null. */
export class Identity {
  private readonly src: IdentitySources;
  private readonly dev: Buffer | undefined;
  private verifier: Promise<OidcVerifier> | undefined;

  constructor(src: IdentitySources) {
    this.src = src;
    this.dev = src.devToken === undefined ? undefined : digest(src.devToken);
  }

  private oidc(s: OidcSettings): Promise<OidcVerifier> {
    this.verifier ??= import('./oidc.ts').then((m) => new m.OidcVerifier(s, this.src.clock));
    return this.verifier;
  }

  /** The discovery of the configured provider (the console's sign-in), null without one; throws when it does not answer. */
  async discovery(): Promise<Discovery | null> {
    return this.src.oidc ? (await this.oidc(this.src.oidc)).discovery() : null;
  }

  async identify(authorization: string | undefined): Promise<Identified> {
    if (authorization === undefined || authorization === '') return { ok: true, principal: null };
    const m = /^Bearer ([\x21-\x7e]{1,8192})$/i.exec(authorization);
    if (!m) return { ok: false, status: 401, reason: 'not "Authorization: Bearer <token or key>"' };
    const given = m[1];
    if (given.startsWith(KEY_PREFIX)) {
      const k = this.src.keys?.find(given);
      return k ? { ok: true, principal: { via: 'key', subject: k.name, name: null, role: k.role } } : { ok: false, status: 401, reason: 'unknown API key' };
    }
    if (this.dev && timingSafeEqual(digest(given), this.dev)) return { ok: true, principal: { via: 'dev', subject: 'dev', name: null, role: 'admin' } };
    if (this.src.oidc && JWT.test(given)) {
      try {
        return { ok: true, principal: { via: 'oidc', ...(await (await this.oidc(this.src.oidc)).verify(given)) } };
      } catch (e) {
        const r = e as { status?: 401 | 503; message: string };
        return { ok: false, status: r.status ?? 401, reason: r.message };
      }
    }
    // the reason names what was tried (a deployment's key made without the prefix lands here)
    const tried = [`not an API key (they start ${KEY_PREFIX})`, this.src.oidc ? 'not a JWT' : '', this.dev ? 'not the development token' : ''];
    return { ok: false, status: 401, reason: `missing or wrong bearer token: ${tried.filter(Boolean).join(', ')}` };
  }
}

/** What the gate let a request through with: its principal, and whether /healthz may show it the reasons. */
export interface Caller {
  principal: Principal | null;
  details: boolean;
}
const CALLERS = new WeakMap<object, Caller>();
/** Called by the gate's hook once a request is let through. */
export const setCaller = (req: object, c: Caller): void => void CALLERS.set(req, c);
/** The caller of a request the gate let through; undefined for one it refused (or never saw). */
export const callerOf = (req: object): Caller | undefined => CALLERS.get(req);
