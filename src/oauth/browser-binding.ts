import type { FastifyReply, FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import type { Config } from '../config.js';
import { safeEqual, sha256 } from '../crypto/secrets.js';

/**
 * The browser that opened /authorize holds a random secret in an HttpOnly cookie; the request
 * keeps only its hash. Only that browser can collect the code, so a request id read off the
 * page (by the agent or anyone else) is useless elsewhere.
 */
export const BROWSER_COOKIE = 'agent_auth_browser';
const SECRET_FORMAT = /^[A-Za-z0-9_-]{43}$/;

export function browserSecret(request: FastifyRequest): string | undefined {
  const value = request.cookies[BROWSER_COOKIE];
  return value && SECRET_FORMAT.test(value) ? value : undefined;
}

/** Reuses the browser's secret (several sign-ins may run in one browser) or sets a new one. */
export function bindBrowser(request: FastifyRequest, reply: FastifyReply, config: Config): string {
  const secret = browserSecret(request) ?? randomBytes(32).toString('base64url');
  reply.setCookie(BROWSER_COOKIE, secret, {
    path: '/authorize',
    httpOnly: true,
    sameSite: 'lax',
    secure: config.issuer.startsWith('https:'),
    maxAge: config.ttl.authRequest,
  });
  return sha256(secret);
}

/** Form token for the approval page: tied to this browser's secret and to one request. */
export function csrfToken(secret: string, requestId: string): string {
  return sha256(`csrf:${secret}:${requestId}`);
}

export function csrfTokenMatches(secret: string, requestId: string, presented: string): boolean {
  return safeEqual(csrfToken(secret, requestId), presented);
}
