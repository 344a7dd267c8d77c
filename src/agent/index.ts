/**
 * agent-auth's agent SDK (`agent-auth/agent`): what an AI agent needs to sign in to a website
 * through agent-auth. Uses only `fetch`; works with any browser library whose page fits `PageLike`.
 */
export {
  AgentAuthClient,
  parseRetryAfter,
  pollDelay,
  type AgentAuthClientOptions,
  type CallOptions,
  type PollOptions,
  type RequestStatus,
  type SignInOptions,
  type WaitOptions,
} from './client.js';
export {
  AccessDeniedError,
  AgentAuthError,
  InvalidCredentialsError,
  InvalidRequestError,
  RateLimitedError,
  RequestAlreadyAuthenticatedError,
  RequestExpiredError,
  RequestNotFoundError,
  TimeoutError,
} from './errors.js';
export { findRequestId, readRequestId, type PageLike, type ReadRequestIdOptions } from './page.js';
