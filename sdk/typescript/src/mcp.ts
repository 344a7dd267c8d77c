/**
 * An agent as an MCP client (`@agent-auth/agent/mcp`): an `OAuthClientProvider` for
 * `@modelcontextprotocol/sdk` whose authorization step is the agent's own headless sign-in at
 * agent-auth. The MCP SDK discovers agent-auth from the MCP server's 401, registers or names the
 * client, and builds the authorization URL; `redirectToAuthorization` then signs the agent in
 * (`AgentAuthClient.signInHeadless`) and keeps the code for `transport.finishAuth`.
 *
 * The MCP SDK is an optional peer: only its types are imported here, so the agent SDK installs
 * and runs without it.
 */
import type { OAuthClientProvider, OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { type AgentAuthClient, authorizationResponse, type WaitOptions } from './client.js';
import { dpopFetch, type DpopPrivateJwk, DpopSigner, generateDpopKey } from './dpop.js';

/** Where the provider keeps what must outlive one call: tokens, the client's registration, the PKCE verifier. */
export interface McpAuthStorage {
  get(key: string): string | undefined | Promise<string | undefined>;
  set(key: string, value: string): void | Promise<void>;
  delete(key: string): void | Promise<void>;
}

export interface AgentOAuthProviderOptions {
  /**
   * Who the MCP client is to agent-auth:
   * - `'agent'`: the agent's own Client ID Metadata Document, `{issuer}/agents/{agent_id}/client-metadata.json`,
   *   authenticated by `private_key_jwt` with the agent's key (needs an https issuer and a client that signs with a key);
   * - an https URL: a Client ID Metadata Document you host (a public client);
   * - `'register'`: dynamic client registration (RFC 7591);
   * - `{client_id, client_secret?}`: a client registered beforehand (its redirect URI as `redirectUrl`).
   * Default: `'agent'` when it is possible, else `'register'`. Where agent-auth does not support
   * metadata documents, the MCP SDK falls back to registration by itself.
   */
  client?: 'agent' | 'register' | string | { client_id: string; client_secret?: string };
  /** The redirect URI the authorization server sends the code to; never loaded (default `http://127.0.0.1/callback`). */
  redirectUrl?: string;
  /** `client_name` for dynamic registration (default "agent-auth agent"). */
  clientName?: string;
  /** Scope to ask for when the MCP server names none (its metadata's `scopes_supported` come first). */
  scope?: string;
  /** Where tokens and the client's registration live (default: in memory, for this process). */
  storage?: McpAuthStorage;
  /** How long to wait for the sign-in and the owner's approval, and `onStatus` to tell the person. */
  signIn?: WaitOptions;
  /**
   * Bind the tokens to a key of the agent's (DPoP, RFC 9449), so that a copied token is worth nothing:
   * the provider's `fetch`, given to the transport, then signs a proof for every token request and
   * every call to the MCP server. The MCP server must check DPoP (`@agent-auth/website/mcp` does).
   * The key is kept in `storage` beside the tokens bound to it. Default false.
   */
  dpop?: boolean;
}

/** The provider, plus the code of the sign-in it ran. */
export interface AgentOAuthProvider extends OAuthClientProvider {
  /** The authorization code of the last `redirectToAuthorization`, for `transport.finishAuth(code)`. */
  authorizationCode(): Promise<string>;
  /**
   * The fetch to give the transport (`new StreamableHTTPClientTransport(url, { authProvider, fetch: provider.fetch })`):
   * with `dpop`, it adds the proofs (the MCP SDK's own requests send bearer tokens only); without, it is fetch.
   */
  fetch: typeof fetch;
}

const DEFAULT_REDIRECT = 'http://127.0.0.1/callback';
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** In-memory storage: what a process keeps until it exits. */
export function memoryStorage(): McpAuthStorage {
  const values = new Map<string, string>();
  return { get: (key) => values.get(key), set: (key, value) => void values.set(key, value), delete: (key) => void values.delete(key) };
}

/** The agent's own Client ID Metadata Document URL at agent-auth. */
export function agentClientMetadataUrl(client: AgentAuthClient): string {
  return `${client.baseUrl}/agents/${encodeURIComponent(client.agentId)}/client-metadata.json`;
}

/** An `OAuthClientProvider` through which `client`, an agent of agent-auth, signs in to MCP servers. */
export function agentOAuthProvider(client: AgentAuthClient, options: AgentOAuthProviderOptions = {}): AgentOAuthProvider {
  const storage = options.storage ?? memoryStorage();
  const redirectUrl = options.redirectUrl ?? DEFAULT_REDIRECT;
  const ownDocument = agentClientMetadataUrl(client);
  const canUseOwnDocument = client.hasKey && ownDocument.startsWith('https://');
  const choice = options.client ?? (canUseOwnDocument ? 'agent' : 'register');
  if (choice === 'agent' && !canUseOwnDocument) {
    throw new TypeError("the agent's own client-metadata document needs an https issuer and an agent that signs with a key");
  }
  const registered = typeof choice === 'object' ? choice : undefined;
  const clientMetadataUrl = choice === 'agent' ? ownDocument : typeof choice === 'string' && choice !== 'register' ? choice : undefined;
  let pending: Promise<string> | undefined;

  const read = async <T>(key: string): Promise<T | undefined> => {
    const text = await storage.get(key);
    return text === undefined ? undefined : (JSON.parse(text) as T);
  };
  const write = (key: string, value: unknown) => storage.set(key, JSON.stringify(value));
  // The key outlives the process with the tokens bound to it (a refresh must prove it).
  const dpopKey = async () => {
    const kept = await read<DpopPrivateJwk>('dpop-key');
    const jwk = kept ?? (await generateDpopKey());
    if (!kept) await write('dpop-key', jwk);
    return jwk;
  };
  const boundToken = async (accessToken: string) => {
    const tokens = await read<OAuthTokens>('tokens');
    return tokens?.access_token === accessToken && tokens.token_type.toLowerCase() === 'dpop';
  };

  // A token request sent again for a DPoP nonce needs an assertion of its own (its jti is single use).
  const renewAssertion = async (body: URLSearchParams) => body.set('client_assertion', await client.clientAssertion(body.get('client_id')!));

  const provider: AgentOAuthProvider = {
    fetch: options.dpop ? dpopFetch(new DpopSigner(dpopKey()), boundToken, fetch, renewAssertion) : (input, init) => fetch(input, init),
    redirectUrl,
    clientMetadataUrl,
    get clientMetadata(): OAuthClientMetadata {
      // What dynamic registration sends: a public client with one loopback redirect (RFC 8252 §7.3).
      return {
        client_name: options.clientName ?? 'agent-auth agent',
        redirect_uris: [redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
        ...(options.scope && { scope: options.scope }),
      };
    },
    async state() {
      const state = crypto.randomUUID();
      await storage.set('state', state);
      return state;
    },
    clientInformation: async () => (await read<OAuthClientInformationMixed>('client')) ?? registered,
    saveClientInformation: (info) => write('client', info),
    tokens: () => read<OAuthTokens>('tokens'),
    saveTokens: (tokens) => write('tokens', tokens),
    saveCodeVerifier: (verifier) => storage.set('verifier', verifier),
    async codeVerifier() {
      const verifier = await storage.get('verifier');
      if (verifier === undefined) throw new Error('no PKCE code verifier saved: no sign-in was started');
      return verifier;
    },
    discoveryState: () => read<OAuthDiscoveryState>('discovery'),
    saveDiscoveryState: (state) => write('discovery', state),
    async invalidateCredentials(scope) {
      const keys = {
        all: ['client', 'tokens', 'verifier', 'discovery'],
        client: ['client'],
        tokens: ['tokens'],
        verifier: ['verifier'],
        discovery: ['discovery'],
      }[scope];
      for (const key of keys) await storage.delete(key);
    },
    async redirectToAuthorization(authorizationUrl) {
      const expectedState = (await storage.get('state')) ?? undefined;
      pending = client
        .signInHeadless(authorizationUrl, options.signIn)
        .then((redirect) => authorizationResponse(redirect, { state: expectedState, issuer: client.baseUrl }).code);
      // The MCP SDK awaits this call and then reports UnauthorizedError; the caller takes the code
      // from authorizationCode(). A failure is reported there, not as an unhandled rejection.
      await pending.catch(() => undefined);
    },
    authorizationCode() {
      return pending ?? Promise.reject(new Error('no sign-in was started: connect the MCP client first'));
    },
    // The agent's own document says private_key_jwt (RFC 7523); other clients as they registered.
    async addClientAuthentication(_headers, params) {
      const info = (await read<OAuthClientInformationMixed>('client')) ?? registered;
      if (!info) return;
      if (info.client_id === ownDocument) {
        params.set('client_id', info.client_id);
        params.set('client_assertion_type', CLIENT_ASSERTION_TYPE);
        params.set('client_assertion', await client.clientAssertion(info.client_id));
      } else {
        // client_secret_post, the method agent-auth advertises; a public client sends its id alone.
        params.set('client_id', info.client_id);
        if (info.client_secret) params.set('client_secret', info.client_secret);
      }
    },
  };
  return provider;
}
