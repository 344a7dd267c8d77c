import { z } from 'zod';
import { InvalidClientMetadata } from '../errors.js';
import { displayText } from '../protocol/text.js';
import { transportProblem } from '../protocol/transport.js';
import type { Client } from '../store/clients.js';
import type { Store } from '../store/index.js';

/**
 * Dynamic client registration (RFC 7591) for the MCP clients that still use it: public clients only
 * (`token_endpoint_auth_method: none`, PKCE always), redirect URIs by the rules for websites, and
 * nothing else kept. A registration that starts no sign-in is purged (src/store/maintenance.ts).
 */

/** RFC 7591 §2, as far as we read it; other members are ignored (§3.2.1 lets the server). */
export const registrationRequest = z.looseObject({
  redirect_uris: z.array(z.string().max(2000)).max(20).optional(),
  client_name: z.string().max(1000).optional(),
  token_endpoint_auth_method: z.string().max(100).optional(),
  grant_types: z.array(z.string().max(100)).max(10).optional(),
  response_types: z.array(z.string().max(100)).max(10).optional(),
});
export type RegistrationRequest = z.output<typeof registrationRequest>;

const GRANT_TYPES = ['authorization_code', 'refresh_token'];
const clientName = displayText(200);

/** The registration's answer (RFC 7591 §3.2.1): the id and the metadata as registered. */
export const registrationResponse = z.object({
  client_id: z.string(),
  client_id_issued_at: z.number().int(),
  client_name: z.string(),
  redirect_uris: z.array(z.string()),
  grant_types: z.array(z.string()),
  response_types: z.array(z.string()),
  token_endpoint_auth_method: z.literal('none'),
});

function checkedRedirectUris(uris: string[] | undefined): string[] {
  if (!uris || uris.length === 0) throw new InvalidClientMetadata('redirect_uris: at least one is required', 'invalid_redirect_uri');
  for (const uri of uris) {
    let problem;
    try {
      problem = uri.includes('#') ? 'must not contain a fragment' : transportProblem(new URL(uri));
    } catch {
      problem = 'must be an absolute URI';
    }
    if (problem) throw new InvalidClientMetadata(`redirect_uris: ${uri} ${problem}`, 'invalid_redirect_uri');
  }
  return [...new Set(uris)];
}

/** Registers a public client; invalid_client_metadata or invalid_redirect_uri for what we do not accept. */
export async function registerClient({ store }: { store: Pick<Store, 'clients'> }, request: RegistrationRequest) {
  const redirectUris = checkedRedirectUris(request.redirect_uris);
  const method = request.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') throw new InvalidClientMetadata('token_endpoint_auth_method: only public clients ("none") may register here');
  const unsupported = (request.grant_types ?? []).filter((g) => !GRANT_TYPES.includes(g));
  if (unsupported.length > 0) throw new InvalidClientMetadata(`grant_types: ${unsupported.join(' ')} is not supported`);
  if ((request.response_types ?? ['code']).some((r) => r !== 'code')) throw new InvalidClientMetadata('response_types: only "code" is supported');
  const name = clientName.safeParse(request.client_name ?? new URL(redirectUris[0]).host);
  if (!name.success) throw new InvalidClientMetadata(`client_name ${name.error.issues[0].message}`);
  const client: Client = await store.clients.register({ name: name.data, redirect_uris: redirectUris });
  return {
    client_id: client.client_id,
    client_id_issued_at: Math.floor(client.created_at.getTime() / 1000),
    client_name: client.name,
    redirect_uris: client.redirect_uris,
    grant_types: GRANT_TYPES,
    response_types: ['code'],
    token_endpoint_auth_method: 'none' as const,
  };
}
