import { authenticateClient, type AuthenticatedClient, type ClientCall } from '../oauth/client-auth.js';
import type { Store } from '../store/index.js';

/** The store slice that client authentication reads. */
export interface ClientReads {
  store: Pick<Store, 'clients'>;
}

/**
 * Authenticates the call's client as read on its own. The grant types and introspection read it
 * together with the token where they can (one round trip), and call authenticateClient themselves.
 */
export async function authenticateCaller({ store }: ClientReads, call: ClientCall): Promise<AuthenticatedClient> {
  const { id } = call.credentials;
  return authenticateClient(call, id === undefined ? undefined : await store.clients.getWithSecret(id));
}
