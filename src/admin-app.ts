import type { FastifyInstance } from 'fastify';
import { adminTokenMatcher } from './admin/admin-token.js';
import adminAgentKeyRoutes from './admin/agent-keys.js';
import adminAgentRoutes from './admin/agents.js';
import adminAuditRoutes from './admin/audit-log.js';
import adminClientRoutes from './admin/clients.js';
import adminGrantRoutes from './admin/grants.js';
import adminLogoutDeliveryRoutes from './admin/logout-deliveries.js';
import adminResourceRoutes from './admin/resources.js';
import adminKeyRoutes from './admin/signing-keys.js';
import consolePlugin from './console/index.js';
import { Unauthorized } from './errors.js';
import { type AppOptions, createFastify } from './fastify.js';
import { emptyJsonIsEmptyObject } from './plugins/empty-json.js';
import errorHandler from './plugins/error-handler.js';
import { metricsEndpoint } from './plugins/metrics.js';
import rateLimits, { ADMIN_FAILURES, byAddress } from './plugins/rate-limit.js';

/**
 * The operators' listener (ADMIN_HOST:ADMIN_PORT, private by default); every /admin call needs the
 * admin token, known here by its SHA-256 digest (src/admin/admin-token.ts).
 */
export async function buildAdminApp(
  services: Parameters<typeof createFastify>[0],
  adminTokenDigest: string,
  options: AppOptions = {},
): Promise<FastifyInstance> {
  // The admin listener believes X-Forwarded-For only when ADMIN_TRUST_PROXY says so: it is reached
  // directly (or through a proxy of its own), and a header a caller sets must not reset its budget.
  const app = createFastify(services, { ...options, trustProxy: services.config.adminTrustProxy });
  await app.register(errorHandler, { failures: services.metrics.failures });
  await app.register(metricsEndpoint);
  await app.register(rateLimits);
  const isAdminToken = adminTokenMatcher(adminTokenDigest);
  // Counted per address, so a stranger's failures never lock out the operator elsewhere (docs/security.md).
  const failures = app.budget(ADMIN_FAILURES, services.config.rateLimits.adminFailuresPerIp, byAddress);

  await app.register(
    async (admin) => {
      emptyJsonIsEmptyObject(admin);
      admin.addHook('onRequest', async (request) => {
        const refused = failures.refusal(request);
        if (refused) throw refused;
        const header = request.headers.authorization ?? '';
        const presented = /^bearer +(\S+)$/i.exec(header)?.[1] ?? '';
        if (!presented || !isAdminToken(presented)) {
          await failures.spend(request);
          throw new Unauthorized('missing or invalid admin token');
        }
      });
      await admin.register(adminClientRoutes);
      await admin.register(adminAgentRoutes);
      await admin.register(adminAgentKeyRoutes);
      await admin.register(adminGrantRoutes);
      await admin.register(adminAuditRoutes);
      await admin.register(adminKeyRoutes);
      await admin.register(adminLogoutDeliveryRoutes);
      await admin.register(adminResourceRoutes);
    },
    { prefix: '/admin' },
  );
  // The web console signs in with the same token and acts through the same functions (src/console).
  await app.register(consolePlugin, { prefix: '/console', adminTokenDigest });

  return app;
}
