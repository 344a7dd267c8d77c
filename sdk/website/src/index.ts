// The website kit's entry point: each module below is re-exported here as it lands.
export {
  type AgentAccessToken,
  type AuthInfo,
  type ProtectedResource,
  protectedResource,
  type ProtectedResourceOptions,
  ResourceAccessError,
} from './mcp.js';
