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
 * the request and is dropped once the sign-in ends (docs/security.md). The routes read and set it
 * (src/plugins/browser-binding.ts); the rules are here.
 */
const SECRET_FORMAT = /^[A-Za-z0-9_-]{43}$/;

/** A fresh binding for a new sign-in: the secret for the cookie and the hash the request keeps. */
export function newBrowserBinding(): { secret: string; hash: string } {
  const secret = randomToken(32);
  return { secret, hash: bindingHash(secret) };
}

export const bindingHash = (secret: string) => sha256(secret);

/** The binding cookie of one sign-in: its name, and its attributes when it is set or cleared. */
export function bindingCookie(config: Pick<Config, 'issuer'>, requestId: string) {
  const secure = config.issuer.startsWith('https:');
  return {
    name: `${secure ? '__Host-' : ''}agent_auth_${requestId}`,
    // __Host- requires Path=/; over plain http (local development) the cookie stays on /authorize*.
    attributes: { path: secure ? '/' : '/authorize', httpOnly: true, sameSite: 'lax' as const, secure },
  };
}

/** A cookie's value as a binding secret, if it looks like one the server minted. */
export function presentedSecret(value: string | undefined): string | undefined {
  return value && SECRET_FORMAT.test(value) ? value : undefined;
}

/** Form token for the approval page: tied to this browser's secret and to one request. */
export function csrfToken(secret: string, requestId: string): string {
  return sha256(`csrf:${secret}:${requestId}`);
}

export function csrfTokenMatches(secret: string, requestId: string, presented: string): boolean {
  return safeEqual(csrfToken(secret, requestId), presented);
}
