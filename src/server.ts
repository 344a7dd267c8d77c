import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { collectDefaultMetrics } from 'prom-client';
import { resolveAdminToken } from './admin/admin-token.js';
import { buildAdminApp } from './admin-app.js';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { watchDataDirSpace } from './jobs/disk-space.js';
import { schedulePurge } from './jobs/purge.js';
import { loggerOptions } from './logger.js';
import { startLogoutSender } from './logout/sender.js';
import { openServices, type Services } from './services.js';

export interface RunningServer {
  /** Addresses actually bound, so PORT=0 / ADMIN_PORT=0 (tests) report the ports picked. */
  url: string;
  adminUrl: string;
  /** Where the admin token is: the ADMIN_TOKEN variable, the file it was read from or written to, or the first instance's. */
  adminTokenSource: string;
  /** Where mail to owners goes: the SMTP server, or the log (SMTP_URL unset). */
  mail: string;
  services: Services;
  close(): Promise<void>;
}

/**
 * Starts both listeners over one store. `close` turns /readyz to 503 and keeps serving for
 * SHUTDOWN_DELAY_SECONDS, then stops taking connections, drains, and closes the store.
 */
export async function startServer(config: Config): Promise<RunningServer> {
  // Asynchronous: a line goes out without a write system call of its own on the request's path, and lines
  // that come while one is being written go out with the next. pino flushes what is left when the process exits.
  const logger = pino(loggerOptions(config.logLevel) as pino.LoggerOptions, pino.destination({ dest: 1, sync: false }));
  const services = await openServices(config);
  const adminToken = await resolveAdminToken(config.adminToken, config.dataDir, services.store).catch(async (err) => {
    await services.db.close();
    throw err;
  });
  // Memory, CPU, event-loop lag and GC beside ours; here and not in openServices, as they watch the whole process.
  collectDefaultMetrics({ register: services.metrics.registry });
  const app = await buildApp(services, { loggerInstance: logger });
  const admin = await buildAdminApp(services, adminToken.digest, {
    loggerInstance: logger.child({ listener: 'admin' }),
  });
  try {
    const url = await app.listen({ port: config.port, host: config.host });
    const adminUrl = await admin.listen({ port: config.adminPort, host: config.adminHost });
    const stopPurge = schedulePurge(services, config.purgeIntervalSeconds, {
      auditRetentionDays: config.auditRetentionDays,
      auditRetentionWithoutAgentDays: config.auditRetentionWithoutAgentDays,
      unusedRegistrationSeconds: config.dynamicRegistration.unusedTtlSeconds,
      log: logger,
    });
    // The embedded store on disk: warn before its disk fills.
    const embeddedOnDisk = !config.databaseUrl && config.dataDir !== 'memory';
    const stopDiskWatch = embeddedOnDisk ? await watchDataDirSpace({ ...services, log: logger }) : async () => {};
    // Back-channel logout: every instance sends from the shared outbox (OpenID Connect mode only).
    const { signingKeys } = services;
    const sender = signingKeys && (await startLogoutSender({ ...services, signingKeys, log: logger.child({ job: 'logout' }) }));
    return {
      url,
      adminUrl,
      adminTokenSource: adminToken.source,
      mail: services.mailer.describe(),
      services,
      async close() {
        // Pre-stop: not ready any more, still serving, until the load balancer has noticed. Answers
        // meanwhile close their connection, so that no keep-alive connection is left for the drain to cut.
        services.lifecycle.stopping = true;
        app.server.on('request', (_request: IncomingMessage, response: ServerResponse) => void (response.shouldKeepAlive = false));
        await sleep(config.shutdownDelaySeconds * 1000);
        await stopPurge();
        await stopDiskWatch();
        await sender?.stop();
        await Promise.all([app.close(), admin.close()]);
        await services.db.close();
      },
    };
  } catch (err) {
    await Promise.all([app.close(), admin.close()]);
    await services.db.close();
    throw err;
  }
}
