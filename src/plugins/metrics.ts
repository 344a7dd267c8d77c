import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** The route pattern, not the URL: unmatched paths share one label so scans cannot grow the series. */
export const routeLabel = (request: FastifyRequest) => request.routeOptions.url ?? 'unmatched';

/** Public listener: latency of every request, and token grants (a 200 from /token) by grant type. */
export const requestMetrics = fp(async function requestMetrics(app: FastifyInstance) {
  const { httpDuration, tokenGrants } = app.services.metrics;
  // Callback-style: every request runs it, and an async hook costs a promise.
  app.addHook('onResponse', (request, reply, done) => {
    const route = routeLabel(request);
    httpDuration.observe({ method: request.method, route, status_code: reply.statusCode }, reply.elapsedTime / 1000);
    if (route === '/token' && reply.statusCode === 200) {
      tokenGrants.inc({ grant_type: (request.body as { grant_type: string }).grant_type });
    }
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
