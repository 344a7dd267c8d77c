import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from 'jose';
import { DpopError, type ProofReplayCache, verifyDpop } from './dpop.js';

/**
 * An MCP server (or any API) protected by agent-auth: the resource server's side of the MCP
 * authorization spec. It publishes RFC 9728 protected-resource metadata naming agent-auth as its
 * authorization server, answers 401 with the RFC 6750 challenge that points there, and verifies
 * agent-auth's RFC 9068 JWT access tokens locally, with keys fetched from the issuer's JWKS.
 */

/** Signature algorithms of agent-auth's resource tokens; never a shared-secret one. */
const ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];
const WELL_KNOWN = '/.well-known/oauth-protected-resource';

export interface ProtectedResourceOptions {
  /** agent-auth's issuer URL, e.g. `https://auth.example`. */
  issuer: string;
  /** This server's resource identifier, as registered at agent-auth (`agent-auth resources add`), e.g. `https://mcp.example.com/mcp`. */
  resource: string;
  /** The scopes this resource accepts, published as `scopes_supported` (clients ask for these). */
  scopes?: string[];
  /** Scopes every request must carry (default none); a route may ask for more with `requiredScopes`. */
  requiredScopes?: string[];
  /** Where the issuer's keys are; default `{issuer}/.well-known/jwks.json`. */
  jwksUri?: string;
  /** Human-readable name, published as `resource_name`. */
  resourceName?: string;
  /** Leeway for `exp`, `iat` and `nbf` against clock skew (default 5 s). */
  clockToleranceSeconds?: number;
  /** Where accepted DPoP proofs are remembered (default: this process's memory); several instances need a shared one. */
  dpopReplayCache?: ProofReplayCache;
}

/**
 * The request a DPoP-bound token came with (RFC 9449 §7.1): its method, its URL as the client
 * addressed it (query and fragment are ignored) and its `DPoP` header.
 */
export interface DpopRequest {
  method: string;
  url: string | URL;
  proof: string | null | undefined;
}

/** A verified access token: who signed in (an agent of agent-auth) and what it may do. */
export interface AgentAccessToken {
  /** The agent's id (`sub`). */
  agentId: string;
  /** The OAuth client that got the token: the MCP client the agent used. */
  clientId: string;
  scopes: string[];
  /** The owner's email, present only when the granted scope shares it. */
  email?: string;
  /** Expiry, seconds since the epoch. */
  expiresAt: number;
  claims: JWTPayload;
}

/**
 * The shape of `@modelcontextprotocol/sdk`'s `AuthInfo`: set as `req.auth`, the SDK's
 * StreamableHTTPServerTransport hands it to tool handlers as `extra.authInfo`.
 */
export interface AuthInfo {
  token: string;
  clientId: string;
  scopes: string[];
  expiresAt: number;
  resource: URL;
  extra: { agentId: string; email?: string };
}

/** Why a request is refused: its status, the `WWW-Authenticate` challenge and the JSON body. */
export class ResourceAccessError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 503,
    /** RFC 6750 §3.1 (or RFC 9449 §7.1) error code; absent when the request carried no token at all. */
    readonly error: 'invalid_request' | 'invalid_token' | 'insufficient_scope' | 'temporarily_unavailable' | 'invalid_dpop_proof' | undefined,
    readonly description: string,
    /** The value of the `WWW-Authenticate` header to send with it. */
    readonly challenge: string,
  ) {
    super(description);
    this.name = 'ResourceAccessError';
  }

  /** The JSON body: `{error, error_description}`. */
  get body() {
    return { error: this.error ?? 'invalid_token', error_description: this.description };
  }
}

export interface ProtectedResource {
  /** The RFC 9728 document (`resource`, `authorization_servers`, `scopes_supported`, `bearer_methods_supported`). */
  readonly metadata: Record<string, unknown>;
  /** Where the document is served on this server: `/.well-known/oauth-protected-resource` + the resource's path (RFC 9728 §3.1). */
  readonly metadataPath: string;
  /** The document's absolute URL, as the 401 challenge names it. */
  readonly metadataUrl: string;
  /**
   * Verifies a bare token; rejects with ResourceAccessError. A DPoP-bound token (`cnf.jkt`) passes only
   * with `dpop`, the request it came with, whose proof is checked (RFC 9449 §7.1).
   */
  verifyToken(token: string, options?: { requiredScopes?: string[]; dpop?: DpopRequest }): Promise<AgentAccessToken>;
  /**
   * Verifies an `Authorization` header value, `Bearer <token>` or `DPoP <token>` (then `dpop`, the
   * request, is needed: its proof is checked); resolves with the MCP SDK's AuthInfo, rejects with ResourceAccessError.
   */
  authenticate(authorization: string | undefined, options?: { requiredScopes?: string[]; dpop?: DpopRequest }): Promise<AuthInfo>;
  /**
   * Node `(req, res, next)` middleware (node:http, Express, Connect): serves the metadata document
   * at its path, and elsewhere requires a valid token, sets `req.auth` and calls `next`; a refusal
   * is answered here.
   */
  middleware(options?: { requiredScopes?: string[] }): (req: IncomingMessage & { auth?: AuthInfo }, res: ServerResponse, next: () => void) => void;
}

const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;

/** The protected resource `options` describes; create it once (its key cache lives in it). */
export function protectedResource(options: ProtectedResourceOptions): ProtectedResource {
  const issuer = withoutTrailingSlash(options.issuer);
  const resourceUrl = new URL(options.resource);
  if (resourceUrl.hash) throw new TypeError('a resource identifier has no fragment (RFC 8707 §2)');
  // agent-auth stores a resource without its trailing slash, and a trailing slash names the same resource.
  const resource = withoutTrailingSlash(options.resource);
  const audiences = [resource, `${resource}/`];
  const scopesSupported = options.scopes ?? [];
  const defaultRequired = options.requiredScopes ?? [];
  const path = withoutTrailingSlash(resourceUrl.pathname);
  const metadataPath = `${WELL_KNOWN}${path}`;
  const metadataUrl = `${resourceUrl.origin}${metadataPath}`;
  const metadata = {
    resource: options.resource,
    authorization_servers: [issuer],
    ...(scopesSupported.length > 0 && { scopes_supported: scopesSupported }),
    bearer_methods_supported: ['header'],
    ...(options.resourceName && { resource_name: options.resourceName }),
  };
  const keys = createRemoteJWKSet(new URL(options.jwksUri ?? `${issuer}/.well-known/jwks.json`));
  const clockTolerance = options.clockToleranceSeconds ?? 5;

  const refuse = (status: ResourceAccessError['status'], error: ResourceAccessError['error'], description: string, scope?: string[]) => {
    // RFC 6750 §3: no error code when no token came; RFC 9728 §5.1: where the metadata is.
    const params = [
      ...(error ? [`error=${quoted(error)}`, `error_description=${quoted(description)}`] : []),
      ...(scope && scope.length > 0 ? [`scope=${quoted(scope.join(' '))}`] : []),
      `resource_metadata=${quoted(metadataUrl)}`,
    ];
    return new ResourceAccessError(status, error, description, `Bearer ${params.join(', ')}`);
  };

  async function verifyToken(
    token: string,
    { requiredScopes = defaultRequired, dpop }: { requiredScopes?: string[]; dpop?: DpopRequest } = {},
  ): Promise<AgentAccessToken> {
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, keys, {
        issuer,
        audience: audiences,
        typ: 'at+jwt',
        algorithms: ALGORITHMS,
        clockTolerance,
        requiredClaims: ['exp', 'iat', 'sub', 'client_id', 'jti'],
      }));
    } catch (err) {
      throw tokenFailure(err);
    }
    // RFC 9449 §7.1: a DPoP-bound token is good only with a proof of its key for this request and token.
    if (dpop) {
      await verifyDpop({ ...dpop, authorization: `DPoP ${token}`, claims: claims as { cnf?: unknown }, replayCache: options.dpopReplayCache }).catch(
        (err: unknown) => {
          if (!(err instanceof DpopError)) throw err;
          throw new ResourceAccessError(err.status, err.error, err.message, `${err.challenge}, resource_metadata=${quoted(metadataUrl)}`);
        },
      );
    } else if (claims.cnf !== undefined) {
      throw refuse(401, 'invalid_token', 'the access token is bound to a key (DPoP): present it under the DPoP scheme with a DPoP proof');
    }
    const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ').filter(Boolean) : [];
    const missing = requiredScopes.filter((s) => !scopes.includes(s));
    if (missing.length > 0) throw refuse(403, 'insufficient_scope', `the access token lacks the scope ${missing.join(' ')}`, requiredScopes);
    return {
      agentId: claims.sub!,
      clientId: String(claims.client_id),
      scopes,
      ...(typeof claims.email === 'string' && { email: claims.email }),
      expiresAt: claims.exp!,
      claims,
    };
  }

  function tokenFailure(err: unknown): ResourceAccessError {
    if (err instanceof errors.JWTExpired) return refuse(401, 'invalid_token', 'the access token has expired');
    if (err instanceof errors.JWTClaimValidationFailed)
      return refuse(401, 'invalid_token', `the access token's ${err.claim} claim is not accepted here`);
    // Not the token's fault: the JWKS could not be fetched (network, timeout, not 200, not a key set).
    const keysUnavailable =
      !(err instanceof errors.JOSEError) || err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid || err.code === 'ERR_JOSE_GENERIC';
    if (keysUnavailable) return refuse(503, 'temporarily_unavailable', "the authorization server's keys could not be fetched");
    return refuse(401, 'invalid_token', 'the access token is not valid');
  }

  async function authenticate(authorization: string | undefined, options: { requiredScopes?: string[]; dpop?: DpopRequest } = {}): Promise<AuthInfo> {
    if (!authorization) throw refuse(401, undefined, 'an access token is required');
    // RFC 6750 §2.1 and RFC 9449 §7.1: `Bearer` or `DPoP` (any case), a space, the token's characters.
    const match = /^(Bearer|DPoP) +([\w\-.~+/]+=*)$/i.exec(authorization.trim());
    if (!match) throw refuse(401, 'invalid_token', 'the Authorization header must be "Bearer <token>" or "DPoP <token>"');
    const token = match[2];
    const bound = match[1].toLowerCase() === 'dpop';
    if (bound && !options.dpop) throw refuse(401, 'invalid_token', 'DPoP is not checked here: present the token as "Bearer <token>"');
    const verified = await verifyToken(token, { requiredScopes: options.requiredScopes, dpop: bound ? options.dpop : undefined });
    return {
      token,
      clientId: verified.clientId,
      scopes: verified.scopes,
      expiresAt: verified.expiresAt,
      resource: resourceUrl,
      extra: { agentId: verified.agentId, ...(verified.email !== undefined && { email: verified.email }) },
    };
  }

  function serveMetadata(req: IncomingMessage, res: ServerResponse) {
    // RFC 9728 §3: public JSON, readable by browser-based clients from any origin.
    res.setHeader('access-control-allow-origin', '*');
    if (req.method !== 'GET' && req.method !== 'HEAD' && req.method !== 'OPTIONS') {
      sendJson(res, 405, { error: 'invalid_request', error_description: 'the metadata document answers GET' }, { allow: 'GET, HEAD, OPTIONS' });
      return;
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { 'access-control-allow-methods': 'GET, HEAD', 'access-control-allow-headers': 'mcp-protocol-version' }).end();
      return;
    }
    sendJson(res, 200, metadata, { 'cache-control': 'public, max-age=3600' }, req.method === 'HEAD');
  }

  return {
    metadata,
    metadataPath,
    metadataUrl,
    verifyToken,
    authenticate,
    middleware(options = {}) {
      return (req, res, next) => {
        // Express strips a mount path from `url` and keeps the whole one in `originalUrl`.
        const url = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/';
        if (new URL(url, 'http://x').pathname === metadataPath) return serveMetadata(req, res);
        // The URL as the client addressed it: the resource's origin, this request's path (RFC 9449 §4.3, htu).
        const dpop = { method: req.method ?? 'GET', url: new URL(url, resourceUrl.origin), proof: singleHeader(req.headers.dpop) };
        authenticate(req.headers.authorization, { ...options, dpop }).then(
          (auth) => {
            req.auth = auth;
            next();
          },
          (err: unknown) => {
            const refusal =
              err instanceof ResourceAccessError ? err : refuse(503, 'temporarily_unavailable', 'the access token could not be checked');
            sendJson(res, refusal.status, refusal.body, { 'www-authenticate': refusal.challenge, 'cache-control': 'no-store' });
          },
        );
      };
    },
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>, headOnly = false) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(headOnly ? undefined : text);
}

/** A header sent once; several are refused by the check that reads it (here: none). */
const singleHeader = (value: string | string[] | undefined) => (Array.isArray(value) ? value.join(', ') : value);

function withoutTrailingSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url;
}
