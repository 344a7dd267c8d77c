import { z } from 'zod';
import { SIGNING_ALGS } from '../protocol/signing.js';
import { transportProblem } from '../protocol/transport.js';

/** Why a redirect URI is refused, or undefined when it is acceptable (README, "Registering a website and an agent"). */
export function redirectUriProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URI';
  }
  if (value.includes('#')) return 'must not contain a fragment';
  return transportProblem(url);
}

export const redirectUri = z
  .string()
  .max(2000)
  .superRefine((value, ctx) => {
    const problem = redirectUriProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const redirectUris = z.array(redirectUri).min(1, 'needs at least one redirect URI').max(20);

// Response shapes (README, "Registering a website and an agent"): the serializer drops anything else, so a secret hash can never leak.
export const clientView = z.object({
  client_id: z.string(),
  name: z.string(),
  redirect_uris: z.array(z.string()),
  id_token_signed_response_alg: z
    .enum(SIGNING_ALGS)
    .nullable()
    .describe('the algorithm its ID tokens are signed with: the registered one, else RS256; null outside OpenID Connect mode'),
  backchannel_logout_uri: z.string().nullable(),
  registration: z.enum(['admin', 'metadata_document', 'dynamic']).describe('who registered it: an operator, its own document, itself (RFC 7591)'),
  token_endpoint_auth_method: z.enum(['client_secret_post', 'none', 'private_key_jwt']),
  dpop_bound_access_tokens: z.boolean(),
  owner_sign_in: z.boolean().describe('a website that offers the owner path on its authorization page (public clients offer it without the flag)'),
  dpop_nonce_required: z.boolean(),
  active: z.boolean(),
  created_at: z.date(),
});
export const agentView = z.object({
  agent_id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  active: z.boolean(),
  secret_enabled: z.boolean().describe('false: the agent is key-only, its secret is refused'),
  client_id: z.string().nullable().describe('the client an agent of kind "client" was made for; null otherwise'),
  kind: z.enum(['agent', 'client']).describe('"client": made when its owner signed in on the authorization page of a person’s client'),
  created_at: z.date(),
});
