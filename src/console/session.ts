import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { adminTokenMatcher } from '../admin/admin-token.js';
import { randomToken, safeEqual } from '../crypto/secrets.js';

const SESSION_COOKIE = 'agent_auth_console';
const LOGIN_COOKIE = 'agent_auth_console_sign_in';
const FLASH_COOKIE = 'agent_auth_console_flash';
const SESSION_HOURS = 8;

/** What one page hands the next across a redirect: a notice, an error, or a secret shown once. */
export interface Flash {
  notice?: string;
  error?: string;
  secret?: { label: string; value: string };
}

/**
 * The console's keys, derived from the admin token's digest (what every instance knows of a
 * generated token): a session is its cookie, so sessions work on every instance and survive
 * restarts, and changing ADMIN_TOKEN ends every session at once (the store remembers only sessions
 * signed out of, src/console/index.ts). Neither the session cookie nor the form tokens reveal the
 * admin token (HMAC-SHA256 is one-way).
 */
export function consoleKeys(adminTokenDigest: string) {
  const derive = (purpose: string) => createHmac('sha256', adminTokenDigest).update(`agent-auth console ${purpose}`).digest();
  const sessionKey = derive('session');
  const formKey = derive('form');
  const flashKey = derive('flash');
  const mac = (key: Buffer, value: string) => createHmac('sha256', key).update(value).digest('base64url');

  const cookie = (request: FastifyRequest, maxAgeSeconds: number) => ({
    path: '/console',
    httpOnly: true,
    sameSite: 'strict' as const,
    secure: request.protocol === 'https',
    maxAge: maxAgeSeconds,
  });

  return {
    isAdminToken: adminTokenMatcher(adminTokenDigest),

    /** A session: its expiry and a random part (two sessions never share a value), MACed. */
    startSession(request: FastifyRequest, reply: FastifyReply) {
      const expires = Math.floor(Date.now() / 1000) + SESSION_HOURS * 3600;
      const body = `${expires}.${randomToken(16)}`;
      reply.setCookie(SESSION_COOKIE, `${body}.${mac(sessionKey, body)}`, cookie(request, SESSION_HOURS * 3600));
      reply.clearCookie(LOGIN_COOKIE, { path: '/console' });
    },

    /** When a session value (as `session` returns it) expires. */
    expiryOf(session: string): Date {
      return new Date(Number(session.split('.')[0]) * 1000);
    },

    endSession(reply: FastifyReply) {
      reply.clearCookie(SESSION_COOKIE, { path: '/console' });
    },

    /** The request's session value when it is genuine and unexpired. */
    session(request: FastifyRequest): string | undefined {
      const value = request.cookies[SESSION_COOKIE];
      const match = value ? /^(\d{1,12})\.([\w-]{22})\.([\w-]{43})$/.exec(value) : null;
      if (!match) return undefined;
      const [, expires, random, presented] = match;
      if (Number(expires) * 1000 <= Date.now()) return undefined;
      return safeEqual(mac(sessionKey, `${expires}.${random}`), presented) ? value : undefined;
    },

    /** The form token of a session: every form carries it, every POST must present it. */
    formToken(session: string): string {
      return mac(formKey, `session:${session}`);
    },

    /**
     * The login form's token, before any session exists: tied to a random cookie of this browser
     * (double submit), so another site cannot post the form in the operator's browser.
     */
    loginFormToken(request: FastifyRequest, reply: FastifyReply): string {
      let nonce = request.cookies[LOGIN_COOKIE];
      if (!nonce || !/^[\w-]{22}$/.test(nonce)) {
        nonce = randomToken(16);
        reply.setCookie(LOGIN_COOKIE, nonce, cookie(request, 3600));
      }
      return mac(formKey, `sign-in:${nonce}`);
    },

    loginFormTokenMatches(request: FastifyRequest, presented: string): boolean {
      const nonce = request.cookies[LOGIN_COOKIE];
      return Boolean(nonce) && safeEqual(mac(formKey, `sign-in:${nonce}`), presented);
    },

    /**
     * Sets the flash for the next page (POST, redirect, GET). Encrypted and authenticated (AES-256-GCM),
     * as it may carry a new secret; it lives a minute and is read once, so a reload shows nothing.
     */
    setFlash(request: FastifyRequest, reply: FastifyReply, flash: Flash) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', flashKey, iv);
      const sealed = Buffer.concat([cipher.update(JSON.stringify(flash), 'utf8'), cipher.final()]);
      const value = Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
      reply.setCookie(FLASH_COOKIE, value, cookie(request, 60));
    },

    /** Reads and clears the flash; anything unreadable counts as none. */
    takeFlash(request: FastifyRequest, reply: FastifyReply): Flash {
      const value = request.cookies[FLASH_COOKIE];
      if (!value) return {};
      reply.clearCookie(FLASH_COOKIE, { path: '/console' });
      try {
        const raw = Buffer.from(value, 'base64url');
        const decipher = createDecipheriv('aes-256-gcm', flashKey, raw.subarray(0, 12));
        decipher.setAuthTag(raw.subarray(12, 28));
        return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as Flash;
      } catch {
        return {};
      }
    },
  };
}

export type ConsoleKeys = ReturnType<typeof consoleKeys>;
