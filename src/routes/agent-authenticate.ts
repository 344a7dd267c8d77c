import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { logAudit, noteExpiry, type AuthenticationFailure } from '../audit.js';
import { verifySecret } from '../crypto/secrets.js';
import { Conflict, InvalidCredentials, NotFound, OAuthError, RequestExpired } from '../errors.js';
import { BODY_REFUSED, errorResponses, RATE_LIMITED, UNAVAILABLE } from '../openapi.js';
import { requestIdSchema } from './authorize-complete.js';

const bodySchema = z.object({
  request_id: requestIdSchema,
  agent_id: z.string().min(1).max(200),
  agent_secret: z.string().min(1).max(500),
  model: z.string().trim().min(1).max(200),
});

const schema = {
  tags: ['agent'],
  description:
    'The agent proves who it is for one authorization request, naming the model it runs on. ' +
    'Repeating a successful call is harmless; any status but 200 is a failure.',
  body: bodySchema,
  response: {
    200: z.object({ status: z.literal('authenticated'), request_id: z.string() }),
    ...errorResponses({
      400: 'invalid_request (a field is missing or malformed) or request_expired',
      401: 'invalid_credentials: unknown or inactive agent, or wrong secret',
      403: 'access_denied: the user denied this sign-in',
      404: 'not_found: no such authorization request',
      409: 'request_already_authenticated: another agent authenticated this request first',
      ...BODY_REFUSED,
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    }),
  },
};

/** POST /api/agent/authenticate: the agent proves who it is for one authorization request. */
export default async function agentAuthenticateRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config, store } = app.services;
  const perIp = app.limiter('authenticate-ip', config.rateLimits.authenticatePerIp, (request) => request.ip);
  // Counted before the secret is checked, so guessing one agent's secret is slow from anywhere.
  const perAgent = app.limiter('authenticate-agent', config.rateLimits.authenticatePerAgent, (request) => {
    const agentId = (request.body as { agent_id?: unknown } | undefined)?.agent_id;
    return typeof agentId === 'string' ? agentId : undefined;
  });

  app.post('/api/agent/authenticate', { schema, onRequest: perIp, preValidation: perAgent }, async (request) => {
    const { request_id: requestId, agent_id: agentId, agent_secret: agentSecret, model } = request.body;
    const who = { request_id: requestId, agent_id: agentId, model };
    // The reason goes to the audit log (row and line), never into the answer.
    const refuse = async (reason: AuthenticationFailure, error: OAuthError) => {
      await store.audit.recordAuthenticationFailure({ requestId, agentId, model, reason });
      logAudit(request.log, 'agent_authentication_failed', { ...who, reason });
      return error;
    };

    // Unknown agent, wrong secret and inactive agent: one answer, and the same work for each
    // (the hash, then the audit row).
    const agent = await store.agents.getWithSecret(agentId);
    const secretMatches = verifySecret(agentSecret, agent?.secret_hash);
    if (!secretMatches || !agent?.active) {
      throw await refuse(!agent ? 'unknown_agent' : !secretMatches ? 'wrong_secret' : 'inactive_agent', new InvalidCredentials());
    }

    const authenticated = await store.requests.authenticate(requestId, agentId, model);
    if (!authenticated) {
      const current = await store.requests.get(requestId);
      if (!current) throw await refuse('request_not_found', new NotFound('the authorization request does not exist'));
      noteExpiry(request, current);
      const sameCall = current.agent_id === agentId && current.model === model;
      // Repeating a successful call is harmless (the agent may not have seen our first answer).
      if (sameCall && (current.status === 'authenticated' || current.status === 'completed') && !current.expired) {
        return { status: 'authenticated' as const, request_id: requestId };
      }
      if (current.expired) throw await refuse('request_expired', new RequestExpired());
      if (current.status === 'error') {
        throw await refuse('request_denied', new OAuthError(current.error ?? 'access_denied', 'this sign-in was denied', 403));
      }
      const taken = current.agent_id === agentId ? 'this agent has already authenticated this request with another model' : 'another agent has already authenticated this request';
      throw await refuse('request_taken', new Conflict('request_already_authenticated', taken));
    }
    app.services.metrics.signIns.inc({ stage: 'authenticated' });
    logAudit(request.log, 'agent_authenticated', { ...who, client_id: authenticated.client_id });
    return { status: 'authenticated' as const, request_id: requestId };
  });
}
