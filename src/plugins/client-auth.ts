import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { InvalidClient } from '../errors.js';
import { authenticateClient, type AuthenticatedClient, claimedClientId } from '../oauth/client-auth.js';
import { byAddress, failureCounter } from './rate-limit.js';

/**
 * Registered inside a route plugin whose handlers authenticate the client themselves (with
 * presentedCredentials and authenticateClient with a ClientRead, reading the client along with what
 * they need).
 *
 * Client ids are public, so nothing an unauthenticated caller does may count against a client
 * (docs/security.md, Rate limits): /token, /introspect and /revoke share one budget of
 * authenticated calls per client, and failed calls count against the caller's address and against
 * the client id it claimed at that address. Every check reads this process's memory only.
 */
export const clientBudget = fp(async function clientBudget(app: FastifyInstance) {
  app.decorateRequest('client', null as unknown as AuthenticatedClient);
  const limits = app.services.config.rateLimits;
  // Per instance: a busy website's every call would otherwise be a command to Redis. The limit
  // protects each instance's capacity, so counting per instance is what it needs.
  const calls = app.budget('client', limits.clientPerClient, (request) => request.client?.client_id ?? claimedClientId(request), {
    perInstance: true,
  });
  const failuresPerAddress = app.budget('client-failures-ip', limits.clientFailuresPerIp, byAddress);
  const failuresPerClient = app.budget('client-failures', limits.clientFailuresPerClient, (request) => {
    const claimed = claimedClientId(request);
    return claimed === undefined ? undefined : `${claimed}@${byAddress(request)}`;
  });
  const countFailure = failureCounter(failuresPerAddress, failuresPerClient, (error) => error instanceof InvalidClient);

  // After the route's own onRequest hooks (a 429 gets the API headers), before the body is parsed.
  // Callback-style hooks, and none for a budget switched off: a busy website pays for every one.
  app.addHook('preParsing', (request, _reply, payload, done) => done(failuresPerAddress.refusal(request), payload));
  app.addHook('preHandler', failuresPerClient.check);
  app.addHook('onError', async (request, reply, error) => {
    if (!request.client) await countFailure(request, reply, error);
  });
  if (!calls.enabled) return;
  app.addHook('preHandler', calls.check);
  app.addHook('onSend', (request, _reply, payload, done) => {
    if (!request.client) return done(null, payload);
    calls.spend(request).then(() => done(null, payload), done);
  });
});

/** Registered inside a route plugin: every route of that plugin requires an authenticated client. */
export const clientAuthentication = fp(async function clientAuthentication(app: FastifyInstance) {
  await app.register(clientBudget);
  app.addHook('preHandler', (request) => authenticateClient(request));
});
