// The website kit's entry point: each module below is re-exported here as it lands.
export {
  type SignedAgent,
  type SignedRequestParts,
  webBotAuthExpress,
  webBotAuthFastify,
  webBotAuthOf,
  type WebBotAuthMiddlewareOptions,
  type WebBotAuthOptions,
  type WebBotAuthRefusal,
  type WebBotAuthResult,
  webBotAuthVerifier,
} from './web-bot-auth.js';
