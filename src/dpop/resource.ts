import { DpopRefused } from '../errors.js';
import { DPOP_ALGS_CHALLENGE, type DpopProofs } from './proofs.js';

/** An access token as the Authorization header carries it: `Bearer` (RFC 6750 §2.1) or `DPoP` (RFC 9449 §7.1). */
export interface PresentedToken {
  scheme: 'Bearer' | 'DPoP';
  token: string;
}

const AUTHORIZATION = /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*) *$/i;

export function presentedToken(authorization: string | undefined): PresentedToken | undefined {
  const match = AUTHORIZATION.exec(authorization ?? '');
  if (!match) return undefined;
  return { scheme: match[1].toLowerCase() === 'dpop' ? 'DPoP' : 'Bearer', token: match[2] };
}

/** The request at the resource: its DPoP header, method and path, and the code its body gives a bad token. */
export interface ResourceRequest {
  proof: string | string[] | undefined;
  method: string;
  path: string;
  /** /userinfo answers `invalid_request` for a missing or invalid token (docs/protocol.md). */
  tokenError: string;
}

/** A 401 whose challenge is DPoP's (RFC 9449 §7.1). */
const challenge = (error: string, description: string, bodyError?: string) =>
  new DpopRefused(error, description, { resource: { algs: DPOP_ALGS_CHALLENGE, bodyError } });

/**
 * RFC 9449 §7: a token bound to a key (`jkt`, its cnf.jkt) is good only under the DPoP scheme with a
 * proof of that key over this request and this token; an unbound one only as a bearer token. Throws
 * the DPoP challenge otherwise; undefined for a valid unbound bearer token, else the checked proof.
 */
export async function checkPresentation(dpop: DpopProofs, presented: PresentedToken, jkt: string | undefined, request: ResourceRequest) {
  if (presented.scheme === 'Bearer') {
    if (jkt)
      throw challenge(
        'invalid_token',
        'this access token is bound to a DPoP key: present it as "Authorization: DPoP" with a DPoP proof',
        request.tokenError,
      );
    return undefined;
  }
  if (!jkt)
    throw challenge('invalid_token', 'this access token is not bound to a DPoP key: present it as "Authorization: Bearer"', request.tokenError);
  const proof = await dpop.check(request.proof, { method: request.method, path: request.path, accessToken: presented.token });
  if (!proof) throw challenge('invalid_dpop_proof', 'a DPoP proof is required with "Authorization: DPoP"');
  if (proof.jkt !== jkt) throw challenge('invalid_dpop_proof', 'the DPoP proof is not signed with the key the access token is bound to');
  return proof;
}

/** A missing or invalid token under the DPoP scheme: the DPoP challenge, as for a bearer token its own. */
export const invalidDpopToken = (bodyError: string) => challenge('invalid_token', 'missing or invalid access token', bodyError);
