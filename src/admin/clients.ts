import { z } from 'zod';
import type { Config } from '../config.js';
import { InvalidClientMetadata, InvalidRequest } from '../errors.js';
import { type AddressRules, logoutUriProblem } from '../logout/delivery-address.js';
import { DEFAULT_SIGNING_ALG, SIGNING_ALGS, type SigningAlg } from '../protocol/signing.js';
import { atLeastOne, name } from '../shapes/bodies.js';
import { clientWrites } from '../tokens/revocation.js';
import { adminResource } from './resource.js';
import { clientView, redirectUri, redirectUris } from './schemas.js';

const idTokenAlg = z.enum(SIGNING_ALGS);
const dpopBound = z.boolean().describe('true: the website must use DPoP (RFC 9449 §5.2); its token requests without a DPoP proof are refused');
const ownerSignIn = z
  .boolean()
  .describe('true: its authorization page offers "Sign in as the owner" to the person in front of it (docs/protocol.md, "People\'s MCP clients")');
const dpopNonce = z
  .boolean()
  .describe('true: its DPoP proofs must carry a server nonce (RFC 9449 §8), at /token and at /userinfo for its tokens; use_dpop_nonce hands one out');

/** A website's registration, as the admin API and the console take it. */
export const clientCreate = z.strictObject({
  name,
  redirect_uris: redirectUris,
  id_token_signed_response_alg: idTokenAlg.optional(),
  backchannel_logout_uri: redirectUri.optional(),
  dpop_bound_access_tokens: dpopBound.optional(),
  owner_sign_in: ownerSignIn.optional(),
  dpop_nonce_required: dpopNonce.optional(),
});
// null clears an optional field: the server's default algorithm, no back-channel logout.
export const clientPatch = atLeastOne(
  z.strictObject({
    name: name.optional(),
    redirect_uris: redirectUris.optional(),
    id_token_signed_response_alg: idTokenAlg.nullable().optional(),
    backchannel_logout_uri: redirectUri.nullable().optional(),
    dpop_bound_access_tokens: dpopBound.optional(),
    owner_sign_in: ownerSignIn.optional(),
    dpop_nonce_required: dpopNonce.optional(),
    active: z.boolean().optional(),
  }),
);

/**
 * What a registration's schema cannot see: back-channel logout needs OpenID Connect mode (logout
 * tokens are signed like ID tokens, and name the sid those carried), and its URI must not reach the
 * admin listener, link-local, metadata or (unless allowed) private addresses: it would make the
 * server POST there. Such an address is invalid_client_metadata (RFC 7591 §3.2.2).
 */
export async function checkLogoutUri(config: Pick<Config, 'idTokenSigningAlg'> & AddressRules, uri: string | null | undefined) {
  if (!uri) return;
  if (!config.idTokenSigningAlg) throw new InvalidRequest('backchannel_logout_uri needs OpenID Connect mode: set ID_TOKEN_SIGNING_ALG');
  const problem = await logoutUriProblem(uri, config);
  if (problem) throw new InvalidClientMetadata(`backchannel_logout_uri ${problem}`);
}

/**
 * The algorithm a website's ID tokens are signed with, as its view shows it: the registered one, or
 * RS256 (docs/protocol.md); none outside OpenID Connect mode, which signs no ID token.
 */
export function effectiveIdTokenAlg(config: Pick<Config, 'idTokenSigningAlg'>, registered: SigningAlg | null): SigningAlg | null {
  return config.idTokenSigningAlg ? (registered ?? DEFAULT_SIGNING_ALG) : null;
}

/** Registration of websites (OAuth clients). Secrets are returned once: at creation and rotation. */
export default adminResource({
  plural: 'clients',
  singular: 'client',
  secretField: 'client_secret',
  view: clientView,
  create: clientCreate,
  patch: clientPatch,
  records: (services, context) => clientWrites(services, context),
  check: ({ config }, body) => checkLogoutUri(config, body.backchannel_logout_uri),
  present: ({ config }, row) => ({ ...row, id_token_signed_response_alg: effectiveIdTokenAlg(config, row.id_token_signed_response_alg) }),
});
