/**
 * agent-auth's agent SDK (`agent-auth/agent`): what an AI agent needs to sign in to a website
 * through agent-auth. Uses only `fetch`; works with any browser library whose page fits `PageLike`.
 */
export {
  AgentAuthClient,
  parseRetryAfter,
  type Authenticated,
  type AuthenticateOptions,
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
  PossibleHijackError,
  RateLimitedError,
  RequestAlreadyAuthenticatedError,
  RequestExpiredError,
  RequestNotFoundError,
  TimeoutError,
  WrongWebsiteError,
} from './errors.js';
export { findRequestId, readRequestId, type PageLike, type ReadRequestIdOptions } from './page.js';
