import type { FastifyRequest } from 'fastify';
import { Forbidden, LoginRequired } from '../errors.js';
import type { StartedSession } from '../owner-flows/sign-in.js';
import type { OwnerSession } from '../store/owner-sessions.js';

/** The owner signed in to /account: their session as the store has it, its digest and the cookie's secret. */
export type SignedInOwner = OwnerSession & { hash: string; secret: string };

declare module 'fastify' {
  interface FastifyRequest {
    /** The owner whose live session the request carries (src/owners/sessions.ts), else null. */
    owner: SignedInOwner | null;
  }
  interface FastifyReply {
    /**
     * The cookie of a session an owner's sign-in has just started (src/owner-flows/sign-in.ts, which
     * ended the session this browser held before): the new one is the only one it holds.
     */
    ownerSession(started: StartedSession): FastifyReply;
  }
  interface FastifyContextConfig {
    /** With `html`: a portal form that scripts may post as JSON; only the form gets pages back. */
    formOrJson?: boolean;
  }
}

/** The owner of the request's session, or 401 login_required. */
export function signedInOwner(request: FastifyRequest): SignedInOwner {
  if (!request.owner) throw new LoginRequired();
  return request.owner;
}

/**
 * A state change must come from this server's own pages or from a script, never from another
 * site in an owner's browser: a foreign `Origin` (or a cross-site fetch, by `Sec-Fetch-Site`) is
 * refused. Browsers send `Origin` with every POST, PATCH and DELETE they make for a page.
 */
export function refuseForeignOrigin(request: FastifyRequest, issuerOrigin: string) {
  const site = request.headers['sec-fetch-site'];
  // Our pages send no referrer, so a browser's form post from them says `Origin: null`; the
  // browser's own Sec-Fetch-Site then says where it came from.
  const origin = request.headers.origin === 'null' && site === 'same-origin' ? issuerOrigin : request.headers.origin;
  if ((origin !== undefined && origin !== issuerOrigin) || site === 'cross-site' || site === 'same-site') {
    throw new Forbidden('this request did not come from this server’s pages');
  }
}

/** A browser's form (the portal's sign-in page) rather than a script: it gets a page back. */
export const isBrowserForm = (request: FastifyRequest) =>
  String(request.headers['content-type']).startsWith('application/x-www-form-urlencoded') && String(request.headers.accept).includes('text/html');
