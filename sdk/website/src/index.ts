// The website kit's entry point: each module below is re-exported here as it lands.
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
