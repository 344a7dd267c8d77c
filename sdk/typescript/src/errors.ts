import { SIGN_IN_ERRORS } from './protocol.js';

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
/** The agent's owner declined this sign-in (check-status says `approval: "denied"`); an AccessDeniedError, so old handlers still catch it. */
export class OwnerDeniedError extends AccessDeniedError {}
/** The sign-in is for another website than the agent expected (`expectedWebsite`); the server left it untouched. */
export class WrongWebsiteError extends AgentAuthError {}

/**
 * Someone else authenticated the sign-in on the agent's own page before the agent did: whoever
 * holds its request id (read off the screen, a log, a shared context) may be signing in as someone
 * else in this browser. Not a retryable conflict: stop, and tell the person.
 */
export class PossibleHijackError extends AgentAuthError {
  constructor(
    readonly requestId: string,
    cause: AgentAuthError,
  ) {
    super(
      cause.code,
      `another agent authenticated sign-in ${requestId} on this agent's page first: possibly a hijack; do not continue it`,
      cause.status,
      { cause },
    );
  }
}

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

const byCode: Partial<Record<string, new (code: string, description: string, status?: number) => AgentAuthError>> = {
  [SIGN_IN_ERRORS.invalidRequest]: InvalidRequestError,
  [SIGN_IN_ERRORS.invalidCredentials]: InvalidCredentialsError,
  [SIGN_IN_ERRORS.notFound]: RequestNotFoundError,
  [SIGN_IN_ERRORS.requestExpired]: RequestExpiredError,
  [SIGN_IN_ERRORS.requestAlreadyAuthenticated]: RequestAlreadyAuthenticatedError,
  [SIGN_IN_ERRORS.accessDenied]: AccessDeniedError,
  [SIGN_IN_ERRORS.redirectOriginMismatch]: WrongWebsiteError,
};

/** The error for one failure body; unknown codes keep the base class. */
export function errorFromBody(
  body: { error?: unknown; error_description?: unknown; approval?: unknown },
  status?: number,
  retryAfter?: number,
): AgentAuthError {
  const code = typeof body.error === 'string' ? body.error : SIGN_IN_ERRORS.serverError;
  const description = typeof body.error_description === 'string' ? body.error_description : `request failed (${code})`;
  if (status === 429 || code === SIGN_IN_ERRORS.rateLimited) return new RateLimitedError(code, description, status ?? 429, retryAfter);
  // check-status says which access_denied is the owner's: approval "denied".
  if (code === SIGN_IN_ERRORS.accessDenied && body.approval === 'denied') return new OwnerDeniedError(code, description, status);
  const Type = byCode[code] ?? AgentAuthError;
  return new Type(code, description, status);
}
