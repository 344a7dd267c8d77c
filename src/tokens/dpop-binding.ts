import { DpopRefused, InvalidRequest } from '../errors.js';
import type { DpopSetting } from './authenticate-caller.js';
import type { TokenRequestFields } from './token-response.js';

/**
 * The DPoP key a token request binds its tokens to (RFC 9449 §5), or null for bearer tokens. A
 * website registered with dpop_bound_access_tokens gets tokens only for a request with a proof (§5.2),
 * one with dpop_nonce_required only for a proof that carries a nonce of ours (§8; the route sends it).
 */
export function dpopKeyOf(client: DpopSetting, body: TokenRequestFields): string | null {
  if (client.dpop_bound_access_tokens && !body.dpop) {
    throw new InvalidRequest('this website must use DPoP (dpop_bound_access_tokens): send a DPoP proof with the token request');
  }
  if (client.dpop_nonce_required && body.dpop && !body.dpop.nonced) {
    throw new DpopRefused('use_dpop_nonce', 'this website demands a DPoP nonce: sign the proof again with the one in DPoP-Nonce');
  }
  return body.dpop?.jkt ?? null;
}
