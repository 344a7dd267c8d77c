import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import type { Config } from '../config.js';
import { InvalidClient } from '../errors.js';
import { displayText } from '../protocol/text.js';
import { transportProblem } from '../protocol/transport.js';
import type { Client, PublicClientFields } from '../store/clients.js';
import type { Store } from '../store/index.js';
import { fetchJsonDocument, FetchRefused, type OutboundFetchOptions } from './outbound-fetch.js';

/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; docs/protocol.md,
 * "MCP clients"): a client_id that is an https URL with a path names the document it is fetched
 * from. The document as last fetched is kept as a client row (so that sign-ins, grants and the
 * audit log treat it as any client) and re-fetched once its cache lifetime, taken from its
 * Cache-Control within [30 s, 1 day], has passed; a failure is never cached. The memory of what was
 * fetched when is per process (a bounded LRU): another instance fetches again, which is harmless.
 */

export const DOCUMENT_MAX_BYTES = 5 * 1024;
const MIN_CACHE_SECONDS = 30;
const MAX_CACHE_SECONDS = 24 * 60 * 60;
const FETCH_TIMEOUT_MS = 5000;
const REMEMBERED_DOCUMENTS = 1000;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const isLoopback = (url: URL) => LOOPBACK_HOSTS.has(url.hostname);

/** A redirect URI as for websites: absolute, no fragment, https (plain http on this machine only). */
const redirectUri = z
  .string()
  .max(2000)
  .refine((value) => {
    try {
      return !value.includes('#') && transportProblem(new URL(value)) === undefined;
    } catch {
      return false;
    }
  }, 'must be an absolute https URI without a fragment (plain http only on localhost, 127.0.0.1 or [::1])');

const jwks = z.object({ keys: z.array(z.record(z.string(), z.unknown())).min(1).max(10) });

const documentSchema = z
  .looseObject({
    client_id: z.string(),
    client_name: displayText(200),
    redirect_uris: z.array(redirectUri).min(1).max(20),
    // Absent: a public client. Shared secrets make no sense for a document anyone can read.
    token_endpoint_auth_method: z.enum(['none', 'private_key_jwt']).default('none'),
    jwks: jwks.optional(),
    jwks_uri: z
      .url({ protocol: /^https$/ })
      .max(2000)
      .optional(),
  })
  .refine((doc) => !Object.keys(doc).some((key) => key.startsWith('client_secret')), 'must not carry client_secret members')
  .refine(
    (doc) => doc.token_endpoint_auth_method === 'none' || (doc.jwks === undefined) !== (doc.jwks_uri === undefined),
    'private_key_jwt needs exactly one of jwks and jwks_uri',
  );

/** The fields of a client from its document (already parsed as JSON), or the reason it is refused. */
export function clientFromDocument(clientId: string, body: unknown): PublicClientFields {
  const parsed = documentSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new FetchRefused(`is not a client metadata document: ${issue.path.join('.') || 'the document'} ${issue.message}`);
  }
  const doc = parsed.data;
  if (doc.client_id !== clientId) throw new FetchRefused('names another client_id than the URL it was fetched from');
  const method = doc.token_endpoint_auth_method;
  return {
    name: doc.client_name,
    redirect_uris: doc.redirect_uris,
    token_endpoint_auth_method: method,
    jwks: method === 'private_key_jwt' ? (doc.jwks ?? null) : null,
    jwks_uri: method === 'private_key_jwt' ? (doc.jwks_uri ?? null) : null,
  };
}

/** Whether a client_id names a metadata document: an https URL with a path, nothing more (no fragment, no credentials). */
export function isDocumentUrl(clientId: string): boolean {
  if (!clientId.startsWith('https://')) return false;
  try {
    const url = new URL(clientId);
    return url.pathname !== '/' && !url.hash && !url.username && !url.password && url.href === clientId;
  } catch {
    return false;
  }
}

/**
 * The agent a URL names as its own document (`{ISSUER}/agents/{agent_id}/client-metadata.json`,
 * src/routes/agent-client-metadata.ts), or undefined: that one resolves here, never over HTTP.
 */
export function agentOfDocument(issuer: string, clientId: string): string | undefined {
  const prefix = `${issuer}/agents/`;
  const suffix = '/client-metadata.json';
  if (!clientId.startsWith(prefix) || !clientId.endsWith(suffix)) return undefined;
  const id = decodeURIComponent(clientId.slice(prefix.length, -suffix.length));
  return /^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : undefined;
}

/** The documents this process fetched, and until when each holds; what the fetches may reach. */
export class ClientDocuments {
  private readonly fetched = new LRUCache<string, number>({ max: REMEMBERED_DOCUMENTS });

  /** `ca`: certificate authorities to trust besides the process's own (tests start https servers with their own CA). */
  constructor(
    private readonly issuer: string,
    public ca?: string,
  ) {}

  fetchOptions(maxBytes = DOCUMENT_MAX_BYTES): OutboundFetchOptions {
    // Development and tests: an issuer on this machine may fetch from this machine (RFC 6890 aside).
    return { allowSpecialUse: isLoopback(new URL(this.issuer)), ca: this.ca, maxBytes, timeoutMs: FETCH_TIMEOUT_MS };
  }

  /** Whether the document of `clientId` was fetched and its cache lifetime has not passed. */
  fresh(clientId: string): boolean {
    return (this.fetched.get(clientId) ?? 0) > Date.now();
  }

  /** Fetches and checks the document of `clientId`; remembered for its cache lifetime once it passed. */
  async fetch(clientId: string): Promise<PublicClientFields> {
    const { body, maxAgeSeconds } = await fetchJsonDocument(new URL(clientId), this.fetchOptions());
    const fields = clientFromDocument(clientId, body);
    const seconds = Math.min(MAX_CACHE_SECONDS, Math.max(MIN_CACHE_SECONDS, maxAgeSeconds ?? 0));
    this.fetched.set(clientId, Date.now() + seconds * 1000);
    return fields;
  }

  /** Forget every document (tests, and an operator's change of a document's client row). */
  forget(clientId?: string): void {
    if (clientId === undefined) this.fetched.clear();
    else this.fetched.delete(clientId);
  }
}

/** The agent's own document (docs/protocol.md, "The agent's client metadata document"). */
export interface AgentDocument {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'private_key_jwt';
  jwks: { keys: Record<string, string>[] };
}

/**
 * Where the agent SDK's headless sign-in is sent back: it reads the code from the redirect and never
 * loads the page, so loopback URIs on any port (RFC 8252 §7.3) serve every agent.
 */
export const AGENT_REDIRECT_URIS = ['http://127.0.0.1/callback', 'http://[::1]/callback'];

export interface ClientResolverDeps {
  config: Pick<Config, 'issuer'>;
  store: Pick<Store, 'clients' | 'agents' | 'agentKeys'>;
  clientDocuments: ClientDocuments;
}

/** An active agent's document, or undefined for an unknown or inactive agent. */
export async function agentDocument(
  { config, store }: Omit<ClientResolverDeps, 'clientDocuments'>,
  agentId: string,
): Promise<AgentDocument | undefined> {
  const agent = await store.agents.getWithSecret(agentId);
  const keys = agent?.active ? await store.agentKeys.list(agentId) : undefined;
  if (!agent || !keys) return undefined;
  return {
    client_id: `${config.issuer}/agents/${encodeURIComponent(agentId)}/client-metadata.json`,
    client_name: agent.name ?? agentId,
    redirect_uris: AGENT_REDIRECT_URIS,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: { keys: keys.map(({ kid, alg, jwk }) => ({ ...jwk, kid, alg, use: 'sig' })) },
  };
}

/**
 * The client a client_id names at /authorize: a registered client, or the client of a metadata
 * document (the agent's own, resolved here; any other fetched when its cache lifetime has passed).
 * Undefined for an unknown client; a document refused is invalid_client, with the reason.
 */
export async function resolveClient(deps: ClientResolverDeps, clientId: string): Promise<Client | undefined> {
  const { config, store, clientDocuments } = deps;
  // An agent's own document is ours, on our issuer (http in development too): read each time, never fetched.
  const agentId = agentOfDocument(config.issuer, clientId);
  if (agentId === undefined && (!isDocumentUrl(clientId) || clientDocuments.fresh(clientId))) return store.clients.get(clientId);
  let fields: PublicClientFields;
  if (agentId !== undefined) {
    const doc = await agentDocument(deps, agentId);
    if (!doc || doc.client_id !== clientId) return undefined;
    // Its keys are the agent's, read when an assertion comes (src/clients/client-assertion.ts).
    fields = { name: doc.client_name, redirect_uris: doc.redirect_uris, token_endpoint_auth_method: 'private_key_jwt', jwks: null, jwks_uri: null };
  } else {
    try {
      fields = await clientDocuments.fetch(clientId);
    } catch (err) {
      if (err instanceof FetchRefused) throw new InvalidClient(`the client metadata document at ${clientId} ${err.message}`, 400);
      throw err;
    }
  }
  const kept = await store.clients.keepDocument(clientId, fields);
  if (!kept) throw new InvalidClient('this client_id is registered otherwise', 400);
  return kept;
}
