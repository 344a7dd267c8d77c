/**
 * The words of the sign-in protocol (statuses, error codes, the longest long poll, what an agent
 * assertion looks like) have one source: the agent SDK package, which ships them to agents without
 * any of the server.
 */
export {
  AGENT_ASSERTION,
  AGENT_AUTHENTICATION_METHODS,
  type AgentAssertionAlg,
  MAX_WAIT_SECONDS,
  SIGN_IN_ERRORS,
  SIGN_IN_STATUSES,
  type SignInError,
  type SignInStatus,
} from '@agent-auth/agent/protocol';
