import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { checkClientAssertion } from '../clients/client-assertion.js';
import { InvalidClient } from '../errors.js';
import { type ClientCall, type CredentialFields, presentedCredentials } from '../oauth/client-credentials.js';
import { byAddress, failureCounter } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the handlers of /token, /introspect and /revoke (clientCall), for the budgets below. */
    clientCall: ClientCall | null;
  }
}

/**
 * The call's credentials, as the request presents them (parsed once per request); its client is set
 * once it authenticates.
 */
export function clientCall(request: FastifyRequest): ClientCall {
  request.clientCall ??= { credentials: presentedCredentials(request.headers.authorization, request.body as CredentialFields) };
  return request.clientCall;
}

/** The client id a request claims (it may not authenticate); none when its credentials are malformed. */
function claimed(request: FastifyRequest): string | undefined {
  try {
    return clientCall(request).credentials.id;
  } catch {
    return undefined;
  }
}
const authenticated = (request: FastifyRequest) => request.clientCall?.client;

/**
 * preValidation hook of /token, /introspect and /revoke: a parameter sent without a value is
 * treated as omitted (RFC 6749 §3.1). Here rather than as a transform in each schema: zod
 * transforms cost more than the rest of the request's validation (bench/README.md).
 */
export function omitEmptyParameters(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
  const body = request.body as Record<string, unknown> | null;
  if (typeof body === 'object' && body !== null) for (const key in body) if (body[key] === '') body[key] = undefined;
  done();
}

/**
 * The hooks of /token, /introspect and /revoke, registered inside their route plugins. Their handlers
 * authenticate the client themselves (src/tokens), reading it along with what they need.
 *
 * Client ids are public, so nothing an unauthenticated caller does may count against a client
 * (docs/security.md, Rate limits): the three endpoints share one budget of authenticated calls per
 * client, and failed calls count against the caller's address and against the client id it claimed
 * at that address. Every check reads this process's memory only.
 */
export const clientEndpoints = fp(async function clientEndpoints(app: FastifyInstance) {
  app.decorateRequest('clientCall', null);
  const limits = app.services.config.rateLimits;
  // Per instance: a busy website's every call would otherwise be a command to Redis. The limit
  // protects each instance's capacity, so counting per instance is what it needs.
  const calls = app.budget('client', limits.clientPerClient, (request) => authenticated(request)?.client_id ?? claimed(request), {
    perInstance: true,
  });
  const failuresPerAddress = app.budget('client-failures-ip', limits.clientFailuresPerIp, byAddress);
  const failuresPerClient = app.budget('client-failures', limits.clientFailuresPerClient, (request) => {
    const id = claimed(request);
    return id === undefined ? undefined : `${id}@${byAddress(request)}`;
  });
  const countFailure = failureCounter(failuresPerAddress, failuresPerClient, (error) => error instanceof InvalidClient);

  // After the route's own onRequest hooks (a 429 gets the API headers), before the body is parsed.
  // Callback-style hooks, and none for a budget switched off: a busy website pays for every one.
  app.addHook('preParsing', (request, _reply, payload, done) => done(failuresPerAddress.refusal(request), payload));
  app.addHook('preValidation', omitEmptyParameters);
  app.addHook('preHandler', failuresPerClient.check);
  // private_key_jwt: the assertion is checked (and its jti spent) before the endpoint reads anything.
  app.addHook('preHandler', (request, _reply, done) => {
    const call = clientCall(request);
    if (call.credentials.assertion === undefined) return done();
    checkClientAssertion(app.services, call).then(() => done(), done);
  });
  app.addHook('onError', async (request, reply, error) => {
    if (!authenticated(request)) await countFailure(request, reply, error);
  });
  if (!calls.enabled) return;
  app.addHook('preHandler', calls.check);
  app.addHook('onSend', (request, _reply, payload, done) => {
    if (!authenticated(request)) return done(null, payload);
    calls.spend(request).then(() => done(null, payload), done);
  });
});
