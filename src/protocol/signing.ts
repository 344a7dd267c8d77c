/** Algorithms an ID token may be signed with in OpenID Connect mode (docs/interop.md). */
export const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];
/**
 * What a website that registered no id_token_signed_response_alg gets, whatever the deployment
 * prefers: RS256 is that field's default (OpenID Connect Dynamic Client Registration §2), and what
 * client libraries assume.
 */
export const DEFAULT_SIGNING_ALG: SigningAlg = 'RS256';
