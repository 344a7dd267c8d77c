/**
 * The words of the sign-in protocol (docs/protocol.md in the agent-auth repository): the states
 * check-status reports, the error codes an agent meets, the longest long poll. Their one source:
 * the server imports them from this package (`@agent-auth/agent/protocol`), so the SDK and the
 * server cannot drift apart, and this file imports nothing.
 */

/** A sign-in's status, as check-status reports it. */
export const SIGN_IN_STATUSES = ['pending', 'authenticated', 'completed', 'error'] as const;
export type SignInStatus = (typeof SIGN_IN_STATUSES)[number];

/** The `error` codes of the agent's endpoints and the sign-in pages. */
export const SIGN_IN_ERRORS = {
  invalidRequest: 'invalid_request',
  invalidCredentials: 'invalid_credentials',
  notFound: 'not_found',
  requestExpired: 'request_expired',
  requestAlreadyAuthenticated: 'request_already_authenticated',
  accessDenied: 'access_denied',
  redirectOriginMismatch: 'redirect_origin_mismatch',
  rateLimited: 'rate_limited',
  temporarilyUnavailable: 'temporarily_unavailable',
  serverError: 'server_error',
} as const;
export type SignInError = (typeof SIGN_IN_ERRORS)[keyof typeof SIGN_IN_ERRORS];

/** check-status holds a long poll (`wait`) at most this many seconds. */
export const MAX_WAIT_SECONDS = 25;

/** How an agent may prove who it is to authenticate: its secret, or an assertion signed by one of its keys. */
export const AGENT_AUTHENTICATION_METHODS = ['agent_secret', 'agent_assertion'] as const;

/**
 * An agent assertion: a compact JWS whose header has this `typ` and one of these `alg`s, valid at
 * most `maxLifetimeSeconds` (exp - iat), checked with at most `clockSkewSeconds` of clock skew.
 */
export const AGENT_ASSERTION = {
  type: 'agent-auth+jwt',
  algorithms: ['EdDSA', 'ES256'],
  maxLifetimeSeconds: 60,
  clockSkewSeconds: 30,
} as const;
export type AgentAssertionAlg = (typeof AGENT_ASSERTION.algorithms)[number];
