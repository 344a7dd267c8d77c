import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { signAccessToken } from '../oauth/access-token.js';
import type { PresentedCredentials } from '../oauth/client-auth.js';
import type { GrantSubject } from '../store/grants.js';

/** The body of a successful token response (RFC 6749 §5.1); both grant types answer with it. */
export const tokenResponseSchema = z.object({
  access_token: z.string(),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int(),
  refresh_token: z.string(),
  scope: z.string(),
  /** OpenID Connect mode, code grant with the openid scope. */
  id_token: z.string().optional(),
});
export type TokenResponse = z.infer<typeof tokenResponseSchema>;

/** The token endpoint's request fields a grant type reads (see the schema in routes/token.ts). */
export interface TokenRequestFields {
  code?: string;
  redirect_uri?: string;
  code_verifier?: string;
  refresh_token?: string;
  scope?: string;
}

/**
 * One grant type: authenticates the client (`credentials`, as presented), checks the request and
 * issues tokens, or throws the OAuth error. A client that fails authentication hears invalid_client
 * before anything about its request.
 */
export type GrantHandler = (request: FastifyRequest, body: TokenRequestFields, credentials: PresentedCredentials) => Promise<TokenResponse>;

/**
 * `grant.scope` is the scope of this access token (and the one reported back). `idToken` signs the
 * ID token, which needs the access token (at_hash).
 */
export async function tokenResponse(
  request: FastifyRequest,
  grant: GrantSubject,
  refreshToken: string,
  idToken?: (accessToken: string) => Promise<string>,
): Promise<TokenResponse> {
  const { token, expiresIn } = signAccessToken(request.server.services, grant);
  const response: TokenResponse = {
    access_token: token,
    token_type: 'Bearer',
    expires_in: expiresIn,
    refresh_token: refreshToken,
    scope: grant.scope,
  };
  return idToken ? { ...response, id_token: await idToken(token) } : response;
}
