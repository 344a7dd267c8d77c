import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { noteExpiry } from '../audit.js';
import { NotFound } from '../errors.js';
import type { RequestWatch } from '../events/request-changes.js';
import { noStore } from '../oauth/no-store.js';
import { errorResponses, RATE_LIMITED, UNAVAILABLE } from '../openapi.js';
import type { RequestState } from '../store/requests.js';
import { requestIdSchema } from './authorize-complete.js';

// The serializer drops fields this does not name; typing statusBody by it keeps the two in step.
const statusSchema = z.object({
  status: z.enum(['pending', 'authenticated', 'completed', 'error']),
  error: z.string().optional().describe('with status error: request_expired or access_denied'),
  error_description: z.string().optional(),
});

/** The spec's bodies; never the code, which only the browser receives. */
export function statusBody(state: RequestState): z.infer<typeof statusSchema> {
  if (state.expired) {
    return { status: 'error', error: 'request_expired', error_description: 'the authorization request has expired' };
  }
  if (state.status === 'error') {
    return { status: 'error', error: state.error ?? 'access_denied', error_description: 'the user denied the sign-in' };
  }
  return { status: state.status };
}

/** Re-read the state at least this often while holding a long poll, in case a notification was lost. */
const RECHECK_MS = 5000;
const MAX_WAIT_SECONDS = 25;

const schema = {
  tags: ['agent'],
  description:
    'The state of an authorization request, for the agent (and the sign-in page) to poll every 1 to 2 seconds. Never the code. ' +
    `With \`wait\` (seconds, at most ${MAX_WAIT_SECONDS}) the answer is held until the state changes: a long poll.`,
  querystring: z.object({
    request_id: requestIdSchema,
    wait: z.coerce.number().int().min(0).max(MAX_WAIT_SECONDS).optional().describe('long poll: hold the answer up to this many seconds until the state changes'),
    last_status: statusSchema.shape.status
      .optional()
      .describe('with wait: the status the caller last saw; the answer is held only while the request still has it (default: its status when the call arrives)'),
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

/**
 * Holds a long poll: returns the state once its status differs from `before`, once the request
 * expires or is gone, when `waitMs` is up, when the client hangs up, or when the server shuts down.
 */
async function awaitChange(
  read: () => Promise<RequestState | undefined>,
  initial: RequestState,
  before: RequestState['status'],
  waitMs: number,
  watch: RequestWatch,
  response: ServerResponse,
  closing: AbortSignal,
) {
  const hungUp = new AbortController();
  response.once('close', () => hungUp.abort());
  const stop = AbortSignal.any([hungUp.signal, closing]);
  const deadline = Date.now() + waitMs;
  let state: RequestState | undefined = initial;
  while (state && statusBody(state).status === before && (before === 'pending' || before === 'authenticated')) {
    const left = Math.min(deadline, state.expires_at.getTime() + 50) - Date.now();
    if (left <= 0 || stop.aborted) break;
    await watch.nextChange(Math.min(left, RECHECK_MS), stop);
    // Undefined once the request is gone (purged or its client deleted): the caller hears 404.
    state = await read();
  }
  return state;
}

/** GET /api/check-status: the agent (and the page) poll a request's state. */
export default async function checkStatusRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config, store } = app.services;
  const perIp = app.limiter('check-status-ip', config.rateLimits.checkStatusPerIp, (request) => request.ip);
  // A shutdown answers held polls at once with the state as it is (the caller asks again, maybe
  // of another instance), so that draining never waits out a 25 s poll.
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());

  app.get('/api/check-status', { schema, onRequest: [noStore, perIp] }, async (request, reply) => {
    const { request_id: id, wait = 0, last_status: lastStatus } = request.query;
    const watch = wait > 0 ? app.services.requestChanges.watch(id) : undefined;
    let state: RequestState | undefined;
    try {
      state = await store.requests.get(id);
      if (state && watch) {
        const before = lastStatus ?? statusBody(state).status;
        state = await awaitChange(() => store.requests.get(id), state, before, wait * 1000, watch, reply.raw, closing.signal);
      }
    } finally {
      watch?.stop();
    }
    if (!state) throw new NotFound('the authorization request does not exist');
    noteExpiry(request, state);
    return statusBody(state);
  });
}
