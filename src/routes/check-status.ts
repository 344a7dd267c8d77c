import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requestIdSchema, status } from '../agent-sign-in/sign-in.js';
import { noStore } from '../plugins/no-store.js';
import { byAddress } from '../plugins/rate-limit.js';
import { MAX_WAIT_SECONDS, SIGN_IN_STATUSES } from '../protocol/sign-in.js';
import { errorResponses, RATE_LIMITED, UNAVAILABLE } from './responses.js';

// The serializer drops fields this does not name; the flow's StatusAnswer fits it.
const statusSchema = z.object({
  status: z.enum(SIGN_IN_STATUSES),
  approval: z
    .enum(['pending', 'approved', 'denied'])
    .optional()
    .describe(
      "with status authenticated, when the agent's owner must approve the sign-in: pending until they approve; with status error (access_denied): denied, the owner declined it",
    ),
  error: z.string().optional().describe('with status error: request_expired or access_denied'),
  error_description: z.string().optional(),
});

const schema = {
  tags: ['agent'],
  description:
    'The state of an authorization request, for the agent (and the sign-in page) to poll every 1 to 2 seconds. Never the code. ' +
    `With \`wait\` (seconds, at most ${MAX_WAIT_SECONDS}) the answer is held until the state changes: a long poll.`,
  querystring: z.object({
    request_id: requestIdSchema,
    wait: z.coerce
      .number()
      .int()
      .min(0)
      .max(MAX_WAIT_SECONDS)
      .optional()
      .describe('long poll: hold the answer up to this many seconds until the state changes'),
    last_status: statusSchema.shape.status
      .optional()
      .describe(
        'with wait: the status the caller last saw; the answer is held only while the request still has it (default: its status when the call arrives)',
      ),
    last_approval: statusSchema.shape.approval.describe(
      'with wait: the approval the caller last saw; the answer is held only while it stays so (default: as it is when the call arrives)',
    ),
  }),
  response: {
    200: statusSchema,
    ...errorResponses({
      400: 'invalid_request: request_id is missing',
      404: 'not_found: the authorization request does not exist',
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    }),
  },
};

/** GET /api/check-status: the agent (and the page) poll a request's state. */
export default async function checkStatusRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;
  const perIp = app.limiter('check-status-ip', config.rateLimits.checkStatusPerIp, byAddress);
  // A shutdown answers held polls at once with the state as it is (the caller asks again, maybe
  // of another instance), so that draining never waits out a 25 s poll.
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());

  app.get('/api/check-status', { schema, onRequest: [noStore, perIp] }, async (request, reply) => {
    const { request_id: requestId, wait = 0, last_status: lastStatus, last_approval: lastApproval } = request.query;
    const context = { log: request.log };
    if (wait === 0) return status(app.services, requestId, context);
    const hungUp = new AbortController();
    reply.raw.once('close', () => hungUp.abort());
    return status(app.services, requestId, context, {
      waitMs: wait * 1000,
      lastStatus,
      lastApproval,
      stop: AbortSignal.any([hungUp.signal, closing.signal]),
    });
  });
}
