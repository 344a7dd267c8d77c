import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { RateLimited } from '../errors.js';

export type RateLimitHook = (request: FastifyRequest) => Promise<void>;

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * A hook that counts requests per `key` under `name` and refuses with 429 past `max` a
     * window. Several may guard one route (per IP and per agent); max 0 switches it off.
     */
    limiter(name: string, max: number, key: (request: FastifyRequest) => string | undefined): RateLimitHook;
  }
}

/**
 * Counters live in Redis when REDIS_URL is set, so every instance shares them; otherwise in
 * this process. Should Redis fail, requests pass (and a warning is logged) rather than fail.
 */
export default fp(async function rateLimits(app: FastifyInstance) {
  const { redisUrl, rateLimits } = app.services.config;
  // Loaded only when used: ioredis alone adds some 15 MB to the resident size.
  const redis = redisUrl
    ? new (await import('ioredis')).Redis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2000, enableOfflineQueue: false, lazyConnect: true })
    : undefined;
  if (redis) {
    redis.on('error', (err: Error) => app.log.warn({ err: { message: err.message } }, 'rate-limit store unavailable'));
    // Start with the connection up; if Redis is down, start anyway and keep retrying in the background.
    await redis.connect().catch(() => {});
    app.addHook('onClose', async () => void redis.disconnect());
  }

  await app.register(fastifyRateLimit, {
    global: false,
    redis,
    nameSpace: 'agent-auth-rl:',
    skipOnError: true,
    timeWindow: rateLimits.windowSeconds * 1000,
  });

  // One counter store per name: every route guarded by the same name shares its budget.
  const checks = new Map<string, ReturnType<FastifyInstance['createRateLimit']>>();
  app.decorate('limiter', (name: string, max: number, key: (request: FastifyRequest) => string | undefined) => {
    if (max === 0) return async () => {};
    if (!checks.has(name)) checks.set(name, app.createRateLimit({ max, keyGenerator: (request) => `${name}:${key(request) ?? ''}` }));
    const check = checks.get(name)!;
    return async (request: FastifyRequest) => {
      if (key(request) === undefined) return;
      const result = await check(request);
      if (!result.isAllowed && result.isExceeded) {
        app.log.info({ limit: name }, 'rate limit hit');
        app.services.metrics.rateLimitHits.inc({ limiter: name });
        throw new RateLimited(result.ttlInSeconds);
      }
    };
  });
});
