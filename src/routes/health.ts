import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceUnavailable } from '../errors.js';
import { errorResponses } from './responses.js';

const ok = z.object({ status: z.literal('ok') });

export default async function healthRoutes(app: FastifyInstance) {
  const probe = (description: string, failures = {}) => ({ tags: ['health'], description, response: { 200: ok, ...failures } });
  app.get('/healthz', { schema: probe('The process is alive.') }, async () => ({ status: 'ok' }));
  const unreachable = errorResponses({ 503: 'temporarily_unavailable: the store is not reachable, or the server is shutting down' });
  app.get('/readyz', { schema: probe('The store answers, so the process can serve requests.', unreachable) }, async () => {
    // Shutting down: not ready, though still serving, so that load balancers stop routing here before the drain.
    if (app.services.lifecycle.stopping) throw new ServiceUnavailable('the server is shutting down');
    try {
      await app.services.store.maintenance.ping();
    } catch {
      throw new ServiceUnavailable('the store is not reachable');
    }
    return { status: 'ok' };
  });
}
