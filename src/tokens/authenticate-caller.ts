import { authenticateClient, type AuthenticatedClient, type ClientCall } from '../oauth/client-credentials.js';
import type { Client } from '../store/clients.js';
import type { Store } from '../store/index.js';

/** Whether the client must use DPoP, and DPoP nonces (src/tokens/dpop-binding.ts). */
export type DpopSetting = Pick<Client, 'dpop_bound_access_tokens' | 'dpop_nonce_required'>;

/** The store slice that client authentication reads. */
export interface ClientReads {
  store: Pick<Store, 'clients'>;
}

/**
 * Authenticates the call's client as read on its own. The grant types and introspection read it
 * together with the token where they can (one round trip), and call authenticateClient themselves.
 */
export async function authenticateCaller({ store }: ClientReads, call: ClientCall): Promise<AuthenticatedClient & DpopSetting> {
  const { id } = call.credentials;
  const stored = id === undefined ? undefined : await store.clients.getWithSecret(id);
  return {
    ...authenticateClient(call, stored),
    dpop_bound_access_tokens: stored?.dpop_bound_access_tokens ?? false,
    dpop_nonce_required: stored?.dpop_nonce_required ?? false,
  };
}
