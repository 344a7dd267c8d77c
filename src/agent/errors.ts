/**
 * What the agent sees when a sign-in fails: the server's `{error, error_description}` body
 * (or the `status: "error"` body of check-status) as one typed error per code, so agents can
 * `catch (e) { if (e instanceof RequestExpiredError) … }` instead of comparing strings.
 */
export class AgentAuthError extends Error {
  constructor(
    /** The server's `error` code, or `timeout` / `server_error` for failures on this side. */
    readonly code: string,
    /** The server's `error_description`. */
    readonly description: string,
    /** HTTP status of the failing response; undefined when no response was involved. */
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(`${code}: ${description}`, options);
    this.name = new.target.name;
  }
}

export class InvalidRequestError extends AgentAuthError {}
export class InvalidCredentialsError extends AgentAuthError {}
export class RequestNotFoundError extends AgentAuthError {}
export class RequestExpiredError extends AgentAuthError {}
export class RequestAlreadyAuthenticatedError extends AgentAuthError {}
export class AccessDeniedError extends AgentAuthError {}

export class RateLimitedError extends AgentAuthError {
  constructor(
    code: string,
    description: string,
    status: number,
    /** Seconds to wait before the next call, from `Retry-After`; undefined when the server sent none. */
    readonly retryAfter?: number,
  ) {
    super(code, description, status);
  }
}

/** The client gave up waiting; `cause` holds the last transient failure, if any. */
export class TimeoutError extends AgentAuthError {
  constructor(description: string, options?: { cause?: unknown }) {
    super('timeout', description, undefined, options);
  }
}

const byCode: Record<string, new (code: string, description: string, status?: number) => AgentAuthError> = {
  invalid_request: InvalidRequestError,
  invalid_credentials: InvalidCredentialsError,
  not_found: RequestNotFoundError,
  request_expired: RequestExpiredError,
  request_already_authenticated: RequestAlreadyAuthenticatedError,
  access_denied: AccessDeniedError,
};

/** The error for one failure body; unknown codes keep the base class. */
export function errorFromBody(
  body: { error?: unknown; error_description?: unknown },
  status?: number,
  retryAfter?: number,
): AgentAuthError {
  const code = typeof body.error === 'string' ? body.error : 'server_error';
  const description = typeof body.error_description === 'string' ? body.error_description : `request failed (${code})`;
  if (status === 429 || code === 'rate_limited') return new RateLimitedError(code, description, status ?? 429, retryAfter);
  const Type = byCode[code] ?? AgentAuthError;
  return new Type(code, description, status);
}
