/** Algorithms an ID token may be signed with in OpenID Connect mode (docs/interop.md). */
export const SIGNING_ALGS = ['RS256', 'ES256', 'EdDSA'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];
