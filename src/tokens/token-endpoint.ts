import { InvalidRequest, UnsupportedGrantType } from '../errors.js';
import type { EventContext } from '../events/emitter.js';
import type { ClientCall } from '../oauth/client-credentials.js';
import { authenticateCaller } from './authenticate-caller.js';
import { authorizationCodeGrant } from './grant-types/authorization-code.js';
import { refreshTokenGrant } from './grant-types/refresh-token.js';
import type { GrantHandler, TokenEndpointDeps, TokenRequestFields, TokenResponse } from './token-response.js';

const GRANT_TYPES = new Map<string, GrantHandler>([
  ['authorization_code', authorizationCodeGrant],
  ['refresh_token', refreshTokenGrant],
]);

/** POST /token (RFC 6749 §3.2): the grant type picks the handler; any other is refused once the client has authenticated. */
export async function issueTokens(
  deps: TokenEndpointDeps,
  call: ClientCall,
  body: TokenRequestFields,
  context: EventContext,
): Promise<TokenResponse> {
  const grant = GRANT_TYPES.get(body.grant_type ?? '');
  if (grant) return grant(deps, call, body, context);
  await authenticateCaller(deps, call);
  throw body.grant_type ? new UnsupportedGrantType(body.grant_type) : new InvalidRequest('grant_type is required');
}
