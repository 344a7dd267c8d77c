import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { randomToken, safeEqual, sha256 } from '../crypto/secrets.js';

/**
 * Every sign-in binds its own browser: the server mints a random secret for that one request (it
 * never adopts a value the browser presents) and sets it in an HttpOnly cookie named after the
 * request id; the request keeps only the secret's hash. Only that browser can collect the code, so a
 * request id read off the page (by the agent or anyone else) is useless elsewhere, and a value
 * planted in the browser beforehand binds nothing. One cookie per sign-in lets several run at once
 * in one browser (tabs). With an https issuer the cookie is `__Host-` prefixed (Secure, Path=/, no
 * Domain), so neither a sibling subdomain nor a plain-http page can set it; it lives no longer than
 * the request and is dropped once the sign-in ends (docs/security.md).
 */
const SECRET_FORMAT = /^[A-Za-z0-9_-]{43}$/;

function cookieOptions(config: Config) {
  const secure = config.issuer.startsWith('https:');
  return {
    // __Host- requires Path=/; over plain http (local development) the cookie stays on /authorize*.
    name: (requestId: string) => `${secure ? '__Host-' : ''}agent_auth_${requestId}`,
    attributes: { path: secure ? '/' : '/authorize', httpOnly: true, sameSite: 'lax' as const, secure },
  };
}

/** A fresh binding for a new sign-in: the secret for the cookie and the hash the request keeps. */
export function newBrowserBinding(): { secret: string; hash: string } {
  const secret = randomToken(32);
  return { secret, hash: sha256(secret) };
}

export function setBindingCookie(reply: FastifyReply, config: Config, requestId: string, secret: string) {
  const { name, attributes } = cookieOptions(config);
  reply.setCookie(name(requestId), secret, { ...attributes, maxAge: config.ttl.authRequest });
}

/** Once the sign-in has ended, its cookie has no use left: it stops riding along on every request. */
export function clearBindingCookie(reply: FastifyReply, config: Config, requestId: string) {
  const { name, attributes } = cookieOptions(config);
  reply.clearCookie(name(requestId), attributes);
}

/** The secret this browser holds for that sign-in, if any. */
export function browserSecret(request: FastifyRequest, config: Config, requestId: string): string | undefined {
  const value = request.cookies[cookieOptions(config).name(requestId)];
  return value && SECRET_FORMAT.test(value) ? value : undefined;
}

/** Form token for the approval page: tied to this browser's secret and to one request. */
export function csrfToken(secret: string, requestId: string): string {
  return sha256(`csrf:${secret}:${requestId}`);
}

export function csrfTokenMatches(secret: string, requestId: string, presented: string): boolean {
  return safeEqual(csrfToken(secret, requestId), presented);
}
