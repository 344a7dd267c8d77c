import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authenticate, requestIdSchema } from '../agent-sign-in/sign-in.js';
import { InvalidCredentials } from '../errors.js';
import { byAddress, failureCounter } from '../plugins/rate-limit.js';
import { displayText, idText } from '../protocol/text.js';
import { BODY_REFUSED, errorResponses, RATE_LIMITED, UNAVAILABLE } from './responses.js';

const bodySchema = z
  .object({
    request_id: requestIdSchema,
    agent_id: idText(),
    agent_secret: z.string().min(1).max(500).optional(),
    agent_assertion: z
      .string()
      .min(1)
      .max(4000)
      .optional()
      .describe('instead of agent_secret: a JWT signed by one of the agent\'s registered keys (docs/protocol.md, "Agent assertions")'),
    model: displayText(200),
    expected_redirect_origin: z
      .string()
      .max(2000)
      .refine(isOrigin, 'must be an origin: scheme://host[:port]')
      .optional()
      .describe("the website the agent means to sign in to; another website's sign-in is refused without authenticating it"),
  })
  // One proof, never two: a caller unsure which one holds must not get to try both at once.
  .refine((body) => (body.agent_secret === undefined) !== (body.agent_assertion === undefined), {
    message: 'give exactly one of agent_secret and agent_assertion',
  });

/** An origin (scheme://host[:port], a trailing slash allowed), nothing more. */
function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return url.origin !== 'null' && url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
  } catch {
    return false;
  }
}

const schema = {
  tags: ['agent'],
  description:
    'The agent proves who it is for one authorization request, naming the model it runs on. ' +
    'Repeating a successful call is harmless; any status but 200 is a failure.',
  body: bodySchema,
  response: {
    200: z.object({
      status: z.literal('authenticated'),
      request_id: z.string(),
      client_id: z.string().describe('the website this sign-in is for'),
      client_name: z.string(),
      redirect_origin: z.string().describe('scheme://host[:port] of the redirect URI: where the code goes'),
      approval: z
        .enum(['pending', 'approved'])
        .optional()
        .describe("present when the agent's owner must approve this sign-in: pending until they do (check-status tells when)"),
    }),
    ...errorResponses({
      400: 'invalid_request (a field is missing or malformed) or request_expired',
      401: "invalid_credentials: unknown or inactive agent, wrong secret (or a key-only agent's), or an assertion that does not hold",
      403:
        "access_denied: this sign-in was denied (by the person or the agent's owner, or ended by an operator), or it is reserved for another agent (login_hint); " +
        'redirect_origin_mismatch: the sign-in is for another website than expected_redirect_origin',
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
  const { config } = app.services;
  // Failures count against the caller's address and the agent id it tried there, never against the
  // agent as such: agent ids are public (docs/security.md, Rate limits).
  const failuresPerAddress = app.budget('authenticate-ip', config.rateLimits.authenticatePerIp, byAddress);
  const failuresPerAgent = app.budget('authenticate-agent', config.rateLimits.authenticatePerAgent, (request) => {
    const agentId = (request.body as { agent_id?: unknown } | undefined)?.agent_id;
    return typeof agentId === 'string' ? `${agentId}@${byAddress(request)}` : undefined;
  });
  const countFailure = failureCounter(failuresPerAddress, failuresPerAgent, (error) => error instanceof InvalidCredentials);

  app.post(
    '/api/agent/authenticate',
    { schema, onRequest: failuresPerAddress.check, preValidation: failuresPerAgent.check, onError: countFailure },
    async (request) => {
      const { request_id: requestId, agent_id: agentId, agent_secret: secret, agent_assertion: assertion, model } = request.body;
      const credential = assertion === undefined ? { secret: secret! } : { assertion };
      return authenticate(
        app.services,
        { requestId, agentId, credential, model, expectedOrigin: request.body.expected_redirect_origin },
        { log: request.log },
      );
    },
  );
}
