import Provider from 'oidc-provider';
import type { Queryable } from '../../../src/db/types.js';
import { postgresAdapter } from './adapter.js';

export const PEER_CLIENT = {
  client_id: 'bench-peer-client',
  client_secret: 'bench-peer-client-secret-0123456789abcdef',
  redirect_uri: 'http://localhost:9/callback',
};

/**
 * node-oidc-provider configured as close to our server as it goes: client_secret_post, PKCE,
 * rotating refresh tokens, introspection and revocation. Access tokens stay in its default
 * format (opaque, stored through the adapter). ID tokens are signed HS256 with the client
 * secret, like our access tokens, so that RSA signing does not weigh on its refresh grant.
 * Accounts live in memory: findAccount costs it no query, whereas we read the email from the store.
 * Without `db` it keeps everything in its own in-memory adapter (its default, for one process).
 */
export function createPeerProvider(issuer: string, db?: Queryable) {
  return new Provider(issuer, {
    ...(db ? { adapter: postgresAdapter(db) } : {}),
    clients: [
      {
        client_id: PEER_CLIENT.client_id,
        client_secret: PEER_CLIENT.client_secret,
        redirect_uris: [PEER_CLIENT.redirect_uri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
        id_token_signed_response_alg: 'HS256',
      },
    ],
    async findAccount(_ctx, id) {
      return { accountId: id, claims: async () => ({ sub: id, email: `${id}@example.com` }) };
    },
    claims: { openid: ['sub'], email: ['email'] },
    features: {
      devInteractions: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
    },
    enabledJWA: { idTokenSigningAlgValues: ['HS256', 'RS256'] },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    cookies: { keys: ['bench-peer-cookie-key-0123456789abcdef'] },
    ttl: { AccessToken: 3600, AuthorizationCode: 600, RefreshToken: 30 * 86400, Grant: 30 * 86400, Interaction: 600, Session: 86400, IdToken: 3600 },
  });
}
