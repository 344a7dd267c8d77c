/**
 * `agent-auth/agent`, kept for agents that import the SDK from the server package: the SDK itself
 * is its own package, `@agent-auth/agent` (sdk/typescript), which this re-exports whole.
 */
export * from '@agent-auth/agent';
