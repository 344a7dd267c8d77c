import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Conflict, NotFound } from '../errors.js';
import type { EventContext } from '../events/emitter.js';
import { idParams } from '../shapes/ids.js';
import type { RevocationLevel } from '../store/grant-records.js';
import type { Store } from '../store/index.js';
import { type RevocationDeps, revokeAtLevel } from '../tokens/revocation.js';
import { agentView } from './schemas.js';

const email = z.email().max(320);

const grantView = z.object({
  grant_id: z.string(),
  agent_id: z.string(),
  email: z.string().describe('the user the agent acts for'),
  client_id: z.string(),
  client_name: z.string(),
  scope: z.string(),
  model: z.string(),
  created_at: z.date(),
  last_refreshed_at: z.date().nullable(),
  expires_at: z.date(),
  revoked_at: z.date().nullable(),
  revoked_reason: z.string().nullable(),
  active: z.boolean(),
});

const clientAgentView = z.object({
  agent_id: z.string(),
  name: z.string().nullable(),
  email: z.string(),
  models: z.array(z.string()),
  grants: z.number().int(),
  last_active_at: z.date(),
});

const revokedView = { 200: z.object({ revoked: z.number().int() }) };

/** The levels operators revoke at (an owner's own levels are theirs: src/owners/agents.ts). */
type AdminLevel = Exclude<RevocationLevel, 'website' | 'owner'>;

// How each level is named in a 404 and in the audit log line (an email stays out of the logs).
const TARGETS: Record<AdminLevel, { noun: string }> = {
  grant: { noun: 'grant with id' },
  agent: { noun: 'agent with id' },
  user: { noun: 'user with email' },
  client: { noun: 'client with id' },
};

/** A record the store did not find is a 404 naming it; the console answers the same. */
export function found<T>(value: T | undefined, level: AdminLevel, key: string): T {
  if (value === undefined) throw new NotFound(`no ${TARGETS[level].noun} ${key}`);
  return value;
}

/** Revokes the grants at one level; the admin API and the console both revoke through here. */
export async function revokeGrants(deps: RevocationDeps<'grantRecords'>, context: EventContext, level: AdminLevel, key: string) {
  return { revoked: found(await revokeAtLevel(deps, level, key, context), level, key).length };
}

/** A user (by email), their agents and every sign-in of those agents. */
export async function userSignIns(store: Store, email: string) {
  const user = found(await store.grantRecords.ofUser(email), 'user', email);
  return { email: user.email, agents: await store.agents.listOfUser(user.user_id), grants: user.grants };
}

/**
 * Agent owners in control: the sign-in history of an agent, a user (by email) and a website, and
 * revocation at every level. A revoked grant's refresh tokens fail and its access tokens are refused
 * at once on every instance: each check reads the grant from the shared store.
 */
export default async function adminGrantRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { grantRecords } = app.services.store;

  const revoke = (request: FastifyRequest, level: AdminLevel, key: string) => revokeGrants(app.services, { log: request.log }, level, key);

  app.get(
    '/agents/:id/grants',
    { schema: { params: idParams, response: { 200: z.object({ agent_id: z.string(), grants: z.array(grantView) }) } } },
    async (request) => {
      const { id } = request.params;
      return { agent_id: id, grants: found(await grantRecords.ofAgent(id), 'agent', id) };
    },
  );

  app.get(
    '/users',
    {
      schema: {
        querystring: z.object({ email }),
        response: { 200: z.object({ email: z.string(), agents: z.array(agentView), grants: z.array(grantView) }) },
      },
    },
    async (request) => {
      return userSignIns(app.services.store, request.query.email);
    },
  );

  // The owner's address changes; it counts as unverified until a sign-in link sent to it is used.
  app.patch(
    '/users',
    {
      schema: {
        querystring: z.object({ email }),
        body: z.strictObject({ email }),
        response: { 200: z.object({ email: z.string(), email_verified: z.boolean() }) },
      },
    },
    async (request) => {
      const changed = await app.services.store.owners.changeEmail(request.query.email, request.body.email);
      if (changed === 'taken') throw new Conflict('email_taken', `another user has the email ${request.body.email}`);
      const { user_id: userId, ...user } = found(changed, 'user', request.query.email);
      await app.services.store.auditLog.recordAction({ actor: 'admin', event: 'owner_email_changed', userId });
      return user;
    },
  );

  app.get(
    '/clients/:id/agents',
    { schema: { params: idParams, response: { 200: z.object({ client_id: z.string(), agents: z.array(clientAgentView) }) } } },
    async (request) => {
      const { id } = request.params;
      return { client_id: id, agents: found(await grantRecords.activeAgentsOf(id), 'client', id) };
    },
  );

  app.post('/grants/:id/revoke', { schema: { params: idParams, response: revokedView } }, async (request) =>
    revoke(request, 'grant', request.params.id),
  );

  // The kill switch: every website loses this agent's tokens.
  app.post('/agents/:id/revoke-grants', { schema: { params: idParams, response: revokedView } }, async (request) =>
    revoke(request, 'agent', request.params.id),
  );

  app.post('/users/revoke-grants', { schema: { body: z.strictObject({ email }), response: revokedView } }, async (request) =>
    revoke(request, 'user', request.body.email),
  );

  app.post('/clients/:id/revoke-grants', { schema: { params: idParams, response: revokedView } }, async (request) =>
    revoke(request, 'client', request.params.id),
  );
}
