import type { FastifyRequest } from 'fastify';
import { noteExpiry } from '../audit.js';
import { safeEqual, sha256 } from '../crypto/secrets.js';
import { InvalidRequest, NotFound, OAuthError, RequestExpired } from '../errors.js';
import type { RequestDetails } from '../store/requests.js';
import type { Store } from '../store/index.js';
import { browserSecret } from './browser-binding.js';

export interface BrowserRequest {
  details: RequestDetails;
  /** The browser's binding secret (from its cookie) and the hash the request stores. */
  secret: string;
  browserHash: string;
}

/** Why a request can no longer move on, as the error the page shows; undefined while it can. */
export function finalStateError(details: RequestDetails): OAuthError | undefined {
  if (details.expired) return new RequestExpired();
  if (details.status === 'error') {
    return new OAuthError(details.error ?? 'access_denied', 'this sign-in was denied', 400);
  }
  if (details.status === 'completed') return new InvalidRequest('this sign-in has already been completed');
  return undefined;
}

/**
 * Loads a request for the browser that started it. A missing or foreign binding cookie means
 * another browser (or an attacker who read the request id) is trying to collect the code.
 * A request that has ended says why first (check-status tells anyone as much): the binding
 * cookie lives only as long as the request, so at expiry the browser has already dropped it.
 */
export async function loadBrowserRequest(store: Store, request: FastifyRequest, requestId: string): Promise<BrowserRequest> {
  const details = await store.requests.getDetails(requestId);
  if (!details) throw new NotFound('the authorization request does not exist');
  noteExpiry(request, details);
  const final = finalStateError(details);
  if (final) throw final;
  const secret = browserSecret(request);
  const browserHash = secret ? sha256(secret) : '';
  if (!secret || !safeEqual(details.browser_hash, browserHash)) {
    throw new InvalidRequest('this sign-in was started in another browser; start again from the website');
  }
  return { details, secret, browserHash };
}
