import type { Config } from '../config.js';
import { randomToken, safeEqual, sha256 } from '../crypto/secrets.js';
import type { Store } from '../store/index.js';
import type { OwnerSession, SessionLifetimes } from '../store/owner-sessions.js';

/**
 * Owner sessions (the portal at /account and its API). The cookie holds 256 random bits; the store
 * keeps only their digest, with the owner, the last request and the end: a session is its row, so
 * signing out (deleting it) holds on every instance at once, and a copy of the cookie is worth
 * nothing after. A new session is always minted at sign-in (no value a browser brings is adopted),
 * so no one can fix a session on an owner's browser. With an https issuer the cookie is `__Host-`
 * prefixed (Secure, Path=/, no Domain): neither a sibling subdomain nor a plain-http page can set it.
 */
export const SESSION_LIFETIMES: SessionLifetimes = { idleSeconds: 60 * 60, absoluteSeconds: 12 * 60 * 60 };

const SECRET_FORMAT = /^[A-Za-z0-9_-]{43}$/;

/** A new session's cookie value and the digest the store keeps. */
export function newSessionSecret(): { secret: string; hash: string } {
  const secret = randomToken(32);
  return { secret, hash: sha256(secret) };
}

/** The session cookie: its name, and its attributes when it is set or cleared. */
export function sessionCookie(config: Pick<Config, 'issuer'>) {
  const secure = config.issuer.startsWith('https:');
  return {
    name: `${secure ? '__Host-' : ''}agent_auth_owner`,
    attributes: { path: '/', httpOnly: true, sameSite: 'lax' as const, secure },
  };
}

/** The cookie of a session a sign-in just started: every way of signing in sets it alike. */
export function ownerSessionCookie(config: Pick<Config, 'issuer'>, sessionSecret: string) {
  const { name, attributes } = sessionCookie(config);
  return [name, sessionSecret, { ...attributes, maxAge: SESSION_LIFETIMES.absoluteSeconds }] as const;
}

/** The owner of the session a cookie names, when it is live; undefined for anything else. */
export async function currentOwner(
  deps: { store: Pick<Store, 'ownerSessions'> },
  cookie: string | undefined,
): Promise<(OwnerSession & { hash: string }) | undefined> {
  if (!cookie || !SECRET_FORMAT.test(cookie)) return undefined;
  const hash = sha256(cookie);
  const session = await deps.store.ownerSessions.touch(hash, SESSION_LIFETIMES.idleSeconds);
  return session && { ...session, hash };
}

/** The token every portal form carries: bound to the session's secret, which only its browser holds. */
export function formToken(sessionSecret: string): string {
  return sha256(`owner-form:${sessionSecret}`);
}

export function formTokenMatches(sessionSecret: string, presented: unknown): boolean {
  return typeof presented === 'string' && safeEqual(formToken(sessionSecret), presented);
}

/**
 * The link page's form (src/account/email-link.ts) before any session exists: its token is tied to
 * a random cookie the page set in this browser (double submit), so another site cannot make an
 * owner's browser use a link of the attacker's (and sign in as the attacker).
 */
export const newLinkFormNonce = () => randomToken(16);

export function linkFormCookie(config: Pick<Config, 'issuer'>) {
  const secure = config.issuer.startsWith('https:');
  return {
    name: `${secure ? '__Host-' : ''}agent_auth_owner_link`,
    attributes: { path: secure ? '/' : '/account/email-link', httpOnly: true, sameSite: 'strict' as const, secure },
  };
}

export const linkFormToken = (nonce: string) => sha256(`owner-link-form:${nonce}`);

export function linkFormTokenMatches(nonce: string | undefined, presented: string): boolean {
  return Boolean(nonce) && safeEqual(linkFormToken(nonce!), presented);
}
