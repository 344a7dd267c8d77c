import { isIPv6 } from 'node:net';
import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { RateLimited } from '../errors.js';
import { throttledWarning } from '../logger.js';

export type RateLimitHook = (request: FastifyRequest) => Promise<void>;
type Key = (request: FastifyRequest) => string | undefined;

/**
 * A budget of events (failed authentications, authenticated calls) per key and window. Events are
 * counted after they happen; a request whose key has spent its budget is refused, from what this
 * process has learnt while counting, so checking costs no round trip to Redis (nor a promise).
 */
export interface Budget {
  /** False when switched off (max 0): nothing is counted and nothing refused. */
  enabled: boolean;
  /** The refusal for a request whose key has spent its budget, else undefined. */
  refusal(request: FastifyRequest): RateLimited | undefined;
  /** `refusal` as an onRequest, preValidation or preHandler hook. */
  check(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void;
  /** Counts one event against the request's key (in Redis when it is configured, unless per instance). */
  spend(request: FastifyRequest): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * A hook that counts requests per `key` under `name` and refuses with 429 past `max` a
     * window. Several may guard one route; max 0 switches it off.
     */
    limiter(name: string, max: number, key: Key): RateLimitHook;
    /**
     * A budget per `key` under `name`; max 0 switches it off. `perInstance`: counted in this process
     * even when Redis is configured, for events too frequent to send each one to Redis.
     */
    budget(name: string, max: number, key: Key, options?: { perInstance?: boolean }): Budget;
  }
}

/**
 * The rate-limit identity of an address: IPv6 clients by their /64 (one subscriber's allocation, in
 * which an attacker may pick any address), IPv4 (also IPv4-mapped IPv6) as it is.
 */
export function addressKey(ip: string): string {
  const address = ip.split('%')[0];
  if (!isIPv6(address)) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1];
  const [head, tail] = address.split('::');
  const groups = (part: string | undefined) => (part ? part.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const before = groups(head);
  const after = tail === undefined ? [] : groups(tail);
  const all = [...before, ...Array(8 - before.length - after.length).fill('0'), ...after];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** The admin listener's one budget of failed authentications per address: the admin API's and the console sign-in's. */
export const ADMIN_FAILURES = 'admin-failures';

/** The request's source address as rate limits key it (after TRUST_PROXY has had its say). */
export const byAddress = (request: FastifyRequest) => addressKey(request.ip);

/**
 * An onError hook for routes that authenticate a caller: a refusal counts against the caller's
 * address, a failed authentication (`authenticationFailed`) also against the identity it claimed at
 * that address. Refusals by a limit and server errors count against no one.
 */
export function failureCounter(perAddress: Budget, perIdentity: Budget, authenticationFailed: (error: Error) => boolean) {
  return async (request: FastifyRequest, _reply: unknown, error: Error & { statusCode?: number }) => {
    if (error instanceof RateLimited || (error.statusCode ?? 500) >= 500) return;
    await Promise.all([perAddress.spend(request), authenticationFailed(error) && perIdentity.spend(request)]);
  };
}

// While the store fails, it is asked again at most this often; in between, limits fail open at once.
const STORE_RETRY_MS = 1000;
// Past this many keys in a map of this process, the expired ones are swept before another is added.
const MAX_TRACKED_KEYS = 10_000;

/**
 * Counters live in Redis when REDIS_URL is set, so every instance shares them; otherwise in
 * this process. Should Redis fail or hang, requests pass (fail open), a warning is logged and the
 * gauge agent_auth_rate_limit_store_degraded reads 1 until Redis answers again (docs/operations.md).
 */
export default fp(async function rateLimits(app: FastifyInstance) {
  const { redisUrl, redisTimeoutMs, rateLimits } = app.services.config;
  const degradedGauge = app.services.metrics.rateLimitStoreDegraded;
  const warn = throttledWarning();
  // Loaded only when used: ioredis alone adds some 15 MB to the resident size.
  const redis = redisUrl
    ? new (await import('ioredis')).Redis(redisUrl, {
        maxRetriesPerRequest: 1,
        // A hung Redis (stopped, or a network black hole) must not hold requests: give up quickly.
        connectTimeout: redisTimeoutMs,
        commandTimeout: redisTimeoutMs,
        enableOfflineQueue: false,
        lazyConnect: true,
      })
    : undefined;

  let retryAt = 0;
  const storeFailed = (err: Error) => {
    if (retryAt === 0) degradedGauge.set(1);
    retryAt = Date.now() + STORE_RETRY_MS;
    warn(app.log, { err: { message: err.message } }, 'rate-limit store unavailable; limits fail open');
  };
  const storeAnswered = () => {
    if (retryAt === 0) return;
    retryAt = 0;
    degradedGauge.set(0);
    app.log.info('rate-limit store answers again');
  };

  if (redis) {
    redis.on('error', storeFailed);
    // Start with the connection up if Redis answers in time; otherwise start anyway and keep retrying.
    await Promise.race([redis.connect().catch(() => {}), new Promise((resolve) => setTimeout(resolve, redisTimeoutMs).unref())]);
    app.addHook('onClose', async () => void redis.disconnect());
  }

  await app.register(fastifyRateLimit, {
    global: false,
    redis,
    nameSpace: 'agent-auth-rl:',
    // Failures are caught below, where they mark the store degraded.
    skipOnError: false,
    timeWindow: rateLimits.windowSeconds * 1000,
  });

  /** Counts one against `name:key`; undefined when the store failed (or is being left alone) and the count is unknown. */
  function counter(name: string, max: number, key: Key) {
    const check = app.createRateLimit({ max, keyGenerator: (request) => `${name}:${key(request)}` });
    return async (request: FastifyRequest) => {
      if (retryAt > Date.now()) return undefined;
      try {
        const result = await check(request);
        storeAnswered();
        return result.isAllowed ? undefined : result; // (allowed outright: only with an allow list, which none has)
      } catch (err) {
        storeFailed(err as Error);
        return undefined;
      }
    };
  }

  /** Like `counter`, in this process's memory: no store to wait for or to fail. */
  function localCounter(max: number, key: Key) {
    const windowMs = rateLimits.windowSeconds * 1000;
    const windows = new Map<string, { count: number; endsAt: number }>();
    return async (request: FastifyRequest) => {
      const k = key(request)!;
      const now = Date.now();
      let window = windows.get(k);
      if (!window || window.endsAt <= now) {
        if (windows.size >= MAX_TRACKED_KEYS) for (const [old, { endsAt }] of windows) if (endsAt <= now) windows.delete(old);
        window = { count: 0, endsAt: now + windowMs };
        windows.set(k, window);
      }
      window.count++;
      return { remaining: Math.max(0, max - window.count), ttl: window.endsAt - now };
    };
  }

  const refuse = (name: string, retryAfterSeconds: number) => {
    app.log.info({ limit: name }, 'rate limit hit');
    app.services.metrics.rateLimitHits.inc({ limiter: name });
    return new RateLimited(retryAfterSeconds);
  };

  // One counter per name: every route guarded by the same name shares its budget.
  const limiters = new Map<string, RateLimitHook>();
  app.decorate('limiter', (name: string, max: number, key: Key): RateLimitHook => {
    if (max === 0) return async () => {};
    if (!limiters.has(name)) {
      const count = counter(name, max, key);
      limiters.set(name, async (request) => {
        if (key(request) === undefined) return;
        const result = await count(request);
        if (result?.isExceeded) throw refuse(name, result.ttlInSeconds);
      });
    }
    return limiters.get(name)!;
  });

  const budgets = new Map<string, Budget>();
  const asHook =
    (refusal: Budget['refusal']): Budget['check'] =>
    (request, _reply, done) =>
      done(refusal(request));
  const off: Budget = { enabled: false, refusal: () => undefined, check: asHook(() => undefined), spend: async () => {} };
  app.decorate('budget', (name: string, max: number, key: Key, { perInstance = false } = {}): Budget => {
    if (max === 0) return off;
    if (!budgets.has(name)) {
      const count = perInstance ? localCounter(max, key) : counter(name, max, key);
      // Keys that have spent their budget, with when the window ends: expired ones are dropped as met.
      const spent = new Map<string, number>();
      const refusal = (request: FastifyRequest) => {
        if (spent.size === 0) return undefined; // the usual case: no key to look for
        const k = key(request);
        const until = k === undefined ? undefined : spent.get(k);
        if (until === undefined) return undefined;
        if (until > Date.now()) return refuse(name, Math.ceil((until - Date.now()) / 1000));
        spent.delete(k!);
        return undefined;
      };
      budgets.set(name, {
        enabled: true,
        refusal,
        check: asHook(refusal),
        async spend(request) {
          const k = key(request);
          if (k === undefined) return;
          const result = await count(request);
          if (!result || result.remaining > 0) return;
          const now = Date.now();
          if (spent.size >= MAX_TRACKED_KEYS) for (const [old, until] of spent) if (until <= now) spent.delete(old);
          spent.set(k, now + result.ttl);
        },
      });
    }
    return budgets.get(name)!;
  });
});
