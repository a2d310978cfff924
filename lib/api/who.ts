// Who made a request: the name the token guard (auth.ts) found for it, read by the audit log
// (audit.ts). Its own file so that neither of the two imports the other.
import type { FastifyRequest } from 'fastify';

const WHO = new WeakMap<FastifyRequest, string>();

/** Called by the token guard once a request is authenticated. */
export const setWho = (req: FastifyRequest, who: string): void => {
  WHO.set(req, who);
};

/** The authenticated caller of a request: "dev" or "token:<first 8 hex digits of the token's SHA-256>"; null without authentication. */
export const whoOf = (req: FastifyRequest): string | null => WHO.get(req) ?? null;
