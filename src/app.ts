import fastifyFormbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import accountPlugin from './account/index.js';
import { type AppOptions, createFastify } from './fastify.js';
import browserBinding from './plugins/browser-binding.js';
import errorHandler from './plugins/error-handler.js';
import htmlPages from './plugins/html-pages.js';
import { requestMetrics } from './plugins/metrics.js';
import openapi from './plugins/openapi.js';
import rateLimits from './plugins/rate-limit.js';
import agentAuthenticateRoute from './routes/agent-authenticate.js';
import agentBySigningKeyRoute from './routes/agent-by-signing-key.js';
import agentClientMetadataRoute from './routes/agent-client-metadata.js';
import assetRoutes from './routes/assets.js';
import authorizeRoute from './routes/authorize.js';
import authorizeCompleteRoute from './routes/authorize-complete.js';
import authorizeDecisionRoute from './routes/authorize-decision.js';
import authorizeOwnerRoutes from './routes/authorize-owner.js';
import checkStatusRoute from './routes/check-status.js';
import healthRoutes from './routes/health.js';
import homeRoute from './routes/home.js';
import introspectRoutes from './routes/introspect.js';
import metadataRoutes from './routes/metadata.js';
import registerRoute from './routes/register.js';
import revokeRoutes from './routes/revoke.js';
import signingKeyDirectoryRoute from './routes/signing-key-directory.js';
import tokenRoutes from './routes/token.js';
import userinfoRoutes from './routes/userinfo.js';
import type { Services } from './services.js';

/** The public listener: everything websites, agents and browsers talk to. */
export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = createFastify(services, options);
  await app.register(errorHandler, { failures: services.metrics.failures });
  await app.register(requestMetrics);
  await app.register(fastifyFormbody);
  await app.register(htmlPages);
  await app.register(rateLimits);
  // After the security headers (so /docs has them too), before the routes it describes.
  await app.register(openapi);
  await app.register(healthRoutes);
  await app.register(metadataRoutes);
  await app.register(tokenRoutes);
  await app.register(userinfoRoutes);
  await app.register(introspectRoutes);
  await app.register(revokeRoutes);
  await app.register(registerRoute);
  await app.register(agentClientMetadataRoute);
  // The sign-in pages are the only routes with cookies (the browser binding): nothing else parses them.
  await app.register(async (browser) => {
    await browser.register(browserBinding);
    await browser.register(authorizeRoute);
    await browser.register(authorizeCompleteRoute);
    await browser.register(authorizeDecisionRoute);
    await browser.register(authorizeOwnerRoutes);
  });
  // Owners: the portal and its API, with the owner session's cookie (src/account).
  await app.register(accountPlugin);
  await app.register(agentAuthenticateRoute);
  await app.register(checkStatusRoute);
  await app.register(signingKeyDirectoryRoute);
  await app.register(agentBySigningKeyRoute);
  await app.register(assetRoutes);
  await app.register(homeRoute);
  return app;
}
