import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceUnavailable } from '../errors.js';
import type { Services } from '../services.js';
import { errorResponses } from './responses.js';

const ok = z.object({ status: z.literal('ok') });

// Instances whose process is shutting down: not ready, though still serving (docs/operations.md).
const stopping = new WeakSet<Services>();

/** From now on /readyz answers 503, so that load balancers stop routing here before the drain. */
export function markStopping(services: Services): void {
  stopping.add(services);
}

export default async function healthRoutes(app: FastifyInstance) {
  const probe = (description: string, failures = {}) => ({ tags: ['health'], description, response: { 200: ok, ...failures } });
  app.get('/healthz', { schema: probe('The process is alive.') }, async () => ({ status: 'ok' }));
  const unreachable = errorResponses({ 503: 'temporarily_unavailable: the store is not reachable, or the server is shutting down' });
  app.get('/readyz', { schema: probe('The store answers, so the process can serve requests.', unreachable) }, async () => {
    if (stopping.has(app.services)) throw new ServiceUnavailable('the server is shutting down');
    try {
      await app.services.store.maintenance.ping();
    } catch {
      throw new ServiceUnavailable('the store is not reachable');
    }
    return { status: 'ok' };
  });
}
