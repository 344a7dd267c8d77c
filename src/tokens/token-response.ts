import { z } from 'zod';
import type { Config } from '../config.js';
import type { EventContext, Events } from '../events/emitter.js';
import { type BoundGrantSubject, signAccessToken, type TokenKeys } from '../oauth/access-token.js';
import type { ClientCall } from '../oauth/client-credentials.js';
import type { SigningKeys } from '../oidc/signing-keys.js';
import type { Store } from '../store/index.js';
import type { ClientReads } from './authenticate-caller.js';
import type { ResourceTokens } from './resource-tokens.js';

/** The body of a successful token response (RFC 6749 §5.1); both grant types answer with it. */
export const tokenResponseSchema = z.object({
  access_token: z.string(),
  /** DPoP when the access token is bound to the key of the request's DPoP proof (RFC 9449 §5). */
  token_type: z.enum(['Bearer', 'DPoP']),
  expires_in: z.number().int(),
  refresh_token: z.string(),
  scope: z.string(),
  /** OpenID Connect mode, code grant with the openid scope. */
  id_token: z.string().optional(),
});
export type TokenResponse = z.infer<typeof tokenResponseSchema>;

/** The token endpoint's request fields a grant type reads (see the schema in routes/token.ts). */
export interface TokenRequestFields {
  grant_type?: string;
  code?: string;
  redirect_uri?: string;
  code_verifier?: string;
  refresh_token?: string;
  scope?: string;
  /** RFC 8707: sent twice, it is refused (invalid_target). */
  resource?: string | string[];
  /**
   * The request's DPoP proof, checked (src/dpop/proofs.ts): the tokens are bound to its key. `nonced`:
   * it carried a good server nonce, which a website registered with dpop_nonce_required demands.
   */
  dpop?: { jkt: string; nonced: boolean };
}

/** What the grant types use: settings, the keys that sign, the store slices they read and write, the events. */
export interface TokenEndpointDeps extends TokenKeys, ClientReads {
  config: Pick<Config, 'issuer' | 'ttl' | 'refreshTokenReuseIntervalSeconds'>;
  store: Pick<Store, 'clients' | 'grants'>;
  /** OpenID Connect mode only: the keys that sign ID tokens. */
  signingKeys?: SigningKeys;
  /** Signs the access tokens of a grant for a resource. */
  resourceTokens: ResourceTokens;
  events: Events;
}

/**
 * One grant type: authenticates the client (`call.credentials`, as presented), checks the request
 * and issues tokens, or throws the OAuth error. A client that fails authentication hears
 * invalid_client before anything about its request.
 */
export type GrantHandler = (deps: TokenEndpointDeps, call: ClientCall, body: TokenRequestFields, context: EventContext) => Promise<TokenResponse>;

/**
 * `grant.scope` is the scope of this access token (and the one reported back); `grant.dpop_jkt` binds
 * it to a DPoP key. `idToken` signs the ID token, which needs the access token (at_hash). `jtiSuffix`:
 * see signAccessToken.
 */
export async function tokenResponse(
  keys: TokenKeys & Pick<TokenEndpointDeps, 'resourceTokens'>,
  grant: BoundGrantSubject,
  refreshToken: string,
  idToken?: (accessToken: string) => Promise<string>,
  jtiSuffix?: string,
): Promise<TokenResponse> {
  const { resource } = grant;
  // A grant for a resource gets its RFC 9068 JWT; any other the website's token, as before.
  const { token, expiresIn } = resource ? await keys.resourceTokens.sign({ ...grant, resource }, jtiSuffix) : signAccessToken(keys, grant, jtiSuffix);
  const response: TokenResponse = {
    access_token: token,
    token_type: grant.dpop_jkt ? 'DPoP' : 'Bearer',
    expires_in: expiresIn,
    refresh_token: refreshToken,
    scope: grant.scope,
  };
  return idToken ? { ...response, id_token: await idToken(token) } : response;
}
