/**
 * Every failure a client can see is one of these: a machine-readable `error` code, a human
 * `error_description`, and the HTTP status. The global error handler renders them as JSON
 * (or as the HTML error page on browser routes); anything else becomes a generic 500.
 */
export class OAuthError extends Error {
  readonly headers: Record<string, string> = {};

  constructor(
    readonly error: string,
    readonly description: string,
    readonly statusCode: number,
  ) {
    super(description);
    this.name = new.target.name;
  }

  toJSON() {
    return { error: this.error, error_description: this.description };
  }
}

export class InvalidRequest extends OAuthError {
  constructor(description: string) {
    super('invalid_request', description, 400);
  }
}

export class InvalidClient extends OAuthError {
  constructor(description = 'client authentication failed', statusCode = 401) {
    super('invalid_client', description, statusCode);
    if (statusCode === 401) this.headers['www-authenticate'] = 'Basic realm="agent-auth"';
  }
}

export class InvalidGrant extends OAuthError {
  constructor(description: string) {
    super('invalid_grant', description, 400);
  }
}

export class InvalidScope extends OAuthError {
  constructor(description: string) {
    super('invalid_scope', description, 400);
  }
}

/** RFC 7591 §3.2.2: a registration whose metadata we do not accept (invalid_redirect_uri for its redirect URIs; not its syntax: that is invalid_request). */
export class InvalidClientMetadata extends OAuthError {
  constructor(description: string, error: 'invalid_client_metadata' | 'invalid_redirect_uri' = 'invalid_client_metadata') {
    super(error, description, 400);
  }
}

/** RFC 8707 §2: an unknown resource, several at once, or one the grant does not cover. */
export class InvalidTarget extends OAuthError {
  constructor(description: string) {
    super('invalid_target', description, 400);
  }
}

export class UnsupportedGrantType extends OAuthError {
  constructor(grantType: string) {
    super('unsupported_grant_type', `grant_type "${grantType}" is not supported`, 400);
  }
}

export class UnsupportedResponseType extends OAuthError {
  constructor(responseType: string) {
    super('unsupported_response_type', `response_type "${responseType}" is not supported; use "code"`, 400);
  }
}

/**
 * RFC 6750 §3.1: a missing, invalid, expired or revoked bearer token. `presented`: a token came and
 * failed; with none at all, the challenge names no error. The body's code is `invalid_token` unless
 * the endpoint fixes another (/userinfo's is `invalid_request`, docs/protocol.md).
 */
export class InvalidToken extends OAuthError {
  constructor(presented: boolean, bodyError = 'invalid_token') {
    super(bodyError, 'missing or invalid access token', 401);
    this.headers['www-authenticate'] = presented ? 'Bearer error="invalid_token"' : 'Bearer';
  }
}

/**
 * A DPoP refusal (RFC 9449): at /token a 400 with the code in the body (§5); at a resource
 * (`resource`: the proof algorithms accepted) a 401 with the DPoP challenge (§7.1, §12.2), whose body
 * code may be another (/userinfo's is `invalid_request` for a bad token, docs/protocol.md). `nonce`: a
 * fresh server nonce for the client to retry with (§8, §9).
 */
export class DpopRefused extends OAuthError {
  constructor(error: string, description: string, options: { resource?: { algs: string; bodyError?: string }; nonce?: string } = {}) {
    const { resource, nonce } = options;
    super(resource?.bodyError ?? error, description, resource ? 401 : 400);
    if (resource) {
      this.headers['www-authenticate'] = `DPoP error="${error}", error_description="${description.replaceAll('"', "'")}", algs="${resource.algs}"`;
    }
    if (nonce) this.headers['dpop-nonce'] = nonce;
  }
}

/** The person denied the sign-in, an operator ended it, or it is reserved for another agent. */
export class AccessDenied extends OAuthError {
  constructor(description: string, statusCode = 403, error = 'access_denied') {
    super(error, description, statusCode);
  }
}

/** The agent expected another website than the one this sign-in is for (docs/protocol.md). */
export class RedirectOriginMismatch extends OAuthError {
  constructor(actualOrigin: string, expectedOrigin: string) {
    super('redirect_origin_mismatch', `this sign-in is for ${actualOrigin}, not ${expectedOrigin}`, 403);
  }
}

/** A form post without a valid anti-forgery token: nothing was changed. */
export class FormRejected extends OAuthError {
  constructor(description: string) {
    super('invalid_request', description, 403);
  }
}

export class PayloadTooLarge extends OAuthError {
  constructor() {
    super('invalid_request', 'request body is too large', 413);
  }
}

export class UriTooLong extends OAuthError {
  constructor() {
    super('invalid_request', 'a path segment is too long', 414);
  }
}

export class UnsupportedMediaType extends OAuthError {
  constructor() {
    super('invalid_request', 'unsupported content type', 415);
  }
}

export class InvalidCredentials extends OAuthError {
  constructor() {
    super('invalid_credentials', 'agent authentication failed', 401);
  }
}

export class NotFound extends OAuthError {
  constructor(description: string) {
    super('not_found', description, 404);
  }
}

export class RequestExpired extends OAuthError {
  constructor() {
    super('request_expired', 'the authorization request has expired', 400);
  }
}

export class Conflict extends OAuthError {
  constructor(error: string, description: string) {
    super(error, description, 409);
  }
}

export class Unauthorized extends OAuthError {
  constructor(description: string) {
    super('unauthorized', description, 401);
    this.headers['www-authenticate'] = 'Bearer';
  }
}

/** An owner API call without a live session (the portal's cookie, src/owners/sessions.ts). */
export class LoginRequired extends OAuthError {
  constructor(description = 'sign in at /account first: there is no live session') {
    super('login_required', description, 401);
  }
}

/** Refused whoever asks: switched off here, or not from this server's own pages. */
export class Forbidden extends OAuthError {
  constructor(description: string) {
    super('forbidden', description, 403);
  }
}

export class ServiceUnavailable extends OAuthError {
  constructor(description = 'the service is temporarily unavailable; try again shortly', retryAfterSeconds = 5) {
    super('temporarily_unavailable', description, 503);
    this.headers['retry-after'] = String(retryAfterSeconds);
  }
}

export class ServerError extends OAuthError {
  constructor() {
    super('server_error', 'the server hit an unexpected error', 500);
  }
}

export class RateLimited extends OAuthError {
  constructor(retryAfterSeconds: number) {
    super('rate_limited', `too many requests; retry after ${retryAfterSeconds} seconds`, 429);
    this.headers['retry-after'] = String(Math.max(1, retryAfterSeconds));
  }
}

/** Approving an agent's sign-in needs fresh proof that the owner is there (a passkey, or a recent email link). */
export class FreshAuthenticationRequired extends OAuthError {
  constructor(description: string) {
    super('fresh_authentication_required', description, 403);
  }
}
