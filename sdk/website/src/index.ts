// The website kit's entry point: each module below is re-exported here as it lands.
export { DPOP_ALGORITHMS, DpopError, memoryReplayCache, type ProofReplayCache, verifyDpop, type VerifyDpopOptions } from './dpop.js';
export {
  type AgentAccessToken,
  type AuthInfo,
  type ProtectedResource,
  protectedResource,
  type ProtectedResourceOptions,
  ResourceAccessError,
} from './mcp.js';
export {
  type SignedAgent,
  type SignedRequestParts,
  webBotAuthExpress,
  webBotAuthFastify,
  type WebBotAuthMiddlewareOptions,
  webBotAuthOf,
  type WebBotAuthOptions,
  type WebBotAuthRefusal,
  type WebBotAuthResult,
  webBotAuthVerifier,
} from './web-bot-auth.js';
