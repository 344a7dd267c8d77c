import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceUnavailable } from '../errors.js';
import { errorResponses } from '../openapi.js';

const ok = z.object({ status: z.literal('ok') });

export default async function healthRoutes(app: FastifyInstance) {
  const probe = (description: string, failures = {}) => ({ tags: ['health'], description, response: { 200: ok, ...failures } });
  app.get('/healthz', { schema: probe('The process is alive.') }, async () => ({ status: 'ok' }));
  const unreachable = errorResponses({ 503: 'temporarily_unavailable: the store is not reachable' });
  app.get('/readyz', { schema: probe('The store answers, so the process can serve requests.', unreachable) }, async () => {
    try {
      await app.services.db.query('SELECT 1');
    } catch {
      throw new ServiceUnavailable('the store is not reachable');
    }
    return { status: 'ok' };
  });
}
