import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type SignInStage = 'started' | 'authenticated' | 'completed' | 'denied' | 'expired';
export type ApprovalOutcome = 'requested' | 'approved' | 'denied' | 'expired';

/**
 * The Prometheus metrics of one process, served by the admin listener's GET /metrics. Each set has
 * its own registry (not prom-client's global one), so several apps in one process never clash.
 * Labels hold route patterns and error codes only: never ids, tokens or anything a client picks.
 */
export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    httpDuration: new Histogram({
      name: 'agent_auth_http_request_duration_seconds',
      help: 'Latency of public-listener requests by method, route pattern and status code',
      labelNames: ['method', 'route', 'status_code'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    signIns: new Counter({
      name: 'agent_auth_sign_ins_total',
      help: 'Sign-in steps: started (/authorize page), authenticated (agent), completed (code issued), denied, expired (a request answered with request_expired)',
      labelNames: ['stage'] as const,
      registers,
    }),
    tokenGrants: new Counter({
      name: 'agent_auth_token_grants_total',
      help: 'Tokens issued by POST /token, by grant type',
      labelNames: ['grant_type'] as const,
      registers,
    }),
    failures: new Counter({
      name: 'agent_auth_failures_total',
      help: 'Error responses by error code and route pattern',
      labelNames: ['error', 'route'] as const,
      registers,
    }),
    rateLimitStoreDegraded: new Gauge({
      name: 'agent_auth_rate_limit_store_degraded',
      help: '1 while the shared rate-limit store (Redis) fails or times out, so that limits fail open; 0 otherwise',
      registers,
    }),
    grantCacheReads: new Counter({
      name: 'agent_auth_grant_cache_reads_total',
      help: 'Grant reads of /userinfo and access-token /introspect: hit (answered from memory), miss (read from the store, then kept), bypass (read from the store: the cache is off, or its notifications are not assured)',
      labelNames: ['result'] as const,
      registers,
    }),
    logoutDeliveries: new Counter({
      name: 'agent_auth_logout_deliveries_total',
      help: 'Back-channel logout token deliveries: delivered (2xx), retried (refused, to be tried again), failed (given up after an hour of retries)',
      labelNames: ['result'] as const,
      registers,
    }),
    dataDirFreeBytes: new Gauge({
      name: 'agent_auth_data_dir_free_bytes',
      help: 'Free bytes on the disk that holds DATA_DIR (the embedded store only), checked every 30 s',
      registers,
    }),
    ownerApprovals: new Counter({
      name: 'agent_auth_owner_approvals_total',
      help: "Owner approval of agents' sign-ins: requested (a sign-in waits for its owner), approved, denied (by the owner), expired (ran out of time while waiting)",
      labelNames: ['outcome'] as const,
      registers,
    }),
    signingKeyReads: new Counter({
      name: 'agent_auth_signing_key_reads_total',
      help: 'Reads of the request-signing keys by websites: directory (the key directory), lookup_found and lookup_unknown (who holds a key, by kid)',
      labelNames: ['read'] as const,
      registers,
    }),
    rateLimitHits: new Counter({
      name: 'agent_auth_rate_limit_hits_total',
      help: 'Requests refused with 429, by limiter',
      labelNames: ['limiter'] as const,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
