import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** The route pattern, not the URL: unmatched paths share one label so scans cannot grow the series. */
export const routeLabel = (request: FastifyRequest) => request.routeOptions.url ?? 'unmatched';

/** Public listener: latency of every request (the events' counters are src/events/metrics.ts). */
export const requestMetrics = fp(async function requestMetrics(app: FastifyInstance) {
  const { httpDuration } = app.services.metrics;
  // Callback-style: every request runs it, and an async hook costs a promise.
  app.addHook('onResponse', (request, reply, done) => {
    httpDuration.observe({ method: request.method, route: routeLabel(request), status_code: reply.statusCode }, reply.elapsedTime / 1000);
    done();
  });
});

/**
 * Admin listener: GET /metrics in Prometheus text format. Registered outside /admin, so a scraper
 * needs no token; the listener itself is private by default.
 */
export async function metricsEndpoint(app: FastifyInstance) {
  const { registry } = app.services.metrics;
  app.get('/metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()));
}
