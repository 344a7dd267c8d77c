/**
 * agent-auth's agent SDK (`@agent-auth/agent`): what an AI agent needs to sign in to a website
 * through agent-auth. Uses only `fetch`; works with any browser library whose page fits `PageLike`.
 */
export {
  type AssertionKey,
  type AssertionSigner,
  createAssertion,
  createClientAssertion,
  keyFromPrivateKey,
  type PrivateKeyInput,
} from './assertion.js';
export {
  AgentAuthClient,
  type AgentAuthClientOptions,
  type Approval,
  type Authenticated,
  type AuthenticateOptions,
  authorizationResponse,
  type CallOptions,
  OWNER_APPROVAL_TIMEOUT_MS,
  parseRetryAfter,
  pollDelay,
  type PollOptions,
  type RequestStatus,
  type SignInOptions,
  type StatusOptions,
  type WaitOptions,
  type WaitStatus,
} from './client.js';
export {
  AccessDeniedError,
  AgentAuthError,
  InvalidCredentialsError,
  InvalidRequestError,
  OwnerDeniedError,
  PossibleHijackError,
  RateLimitedError,
  RequestAlreadyAuthenticatedError,
  RequestExpiredError,
  RequestNotFoundError,
  TimeoutError,
  WrongWebsiteError,
} from './errors.js';
export {
  authorityOf,
  type Component,
  contentDigest,
  type MessageParts,
  parseSignature,
  parseSignatureInput,
  parseStringField,
  serializeSignatureInput,
  signatureBase,
  WEB_BOT_AUTH,
} from './http-signatures.js';
export { findRequestId, type PageLike, readRequestId, type ReadRequestIdOptions } from './page.js';
export {
  AGENT_ASSERTION,
  AGENT_AUTHENTICATION_METHODS,
  type AgentAssertionAlg,
  MAX_WAIT_SECONDS,
  SIGN_IN_ERRORS,
  SIGN_IN_STATUSES,
  type SignInError,
  type SignInStatus,
} from './protocol.js';
export { type RequestSigner, requestSigner, type RequestSigningKey, signedFetch, signRequest, type SignRequestOptions } from './signed-requests.js';
