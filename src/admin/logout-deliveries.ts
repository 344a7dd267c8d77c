import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { NotFound } from '../errors.js';
import { recordId } from '../shapes/ids.js';

const STATUSES = ['pending', 'delivered', 'failed'] as const;

export const deliveryView = z.object({
  jti: z.string().describe('the logout token’s jti, the same on every attempt'),
  client_id: z.string(),
  agent_id: z.string(),
  sid: z.string().describe('the grant whose ending it tells'),
  uri: z.string(),
  reason: z.string().describe('why the grant ended (grants.revoked_reason)'),
  status: z.enum(STATUSES),
  attempts: z.number().int(),
  created_at: z.date(),
  next_attempt_at: z.date(),
  last_attempt_at: z.date().nullable(),
  last_error: z.string().nullable(),
  delivered_at: z.date().nullable(),
});

/**
 * GET /admin/logout-deliveries and POST /admin/logout-deliveries/:jti/retry: the back-channel logout
 * outbox, newest first, and another try of a delivery given up as failed (docs/operations.md).
 */
export default async function adminLogoutDeliveryRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { logoutDeliveries } = app.services.store;

  app.get(
    '/logout-deliveries',
    {
      schema: {
        querystring: z.strictObject({
          status: z.enum(STATUSES).optional(),
          client_id: recordId().optional(),
          limit: z.coerce.number().int().min(1).max(500).default(100),
        }),
        response: { 200: z.object({ deliveries: z.array(deliveryView) }) },
      },
    },
    async (request) => {
      const { status, client_id: clientId, limit } = request.query;
      return { deliveries: await logoutDeliveries.list({ status, clientId, limit }) };
    },
  );

  app.post(
    '/logout-deliveries/:jti/retry',
    { schema: { params: z.object({ jti: recordId() }), response: { 200: deliveryView } } },
    async (request) => {
      const retried = await logoutDeliveries.retry(request.params.jti);
      if (!retried) throw new NotFound(`no failed logout delivery with jti ${request.params.jti}`);
      request.log.info({ jti: retried.jti, client_id: retried.client_id }, 'logout delivery retried by an operator');
      return retried;
    },
  );
}
