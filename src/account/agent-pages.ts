import type { FastifyInstance } from 'fastify';
import { listAgentKeys, REQUEST_SIGNING_KEYS } from '../agent-keys/registration.js';
import { NotFound } from '../errors.js';
import { sharedInWords } from '../oauth/scopes.js';
import { ownAgent } from '../owners/agents.js';
import { POLICY_CHOICES } from '../owners/protection.js';
import { recordId } from '../shapes/ids.js';
import { renderAccount } from './render.js';

// An id that cannot exist is an agent that does not exist.
const agentId = recordId();

/**
 * GET /account/agents/:id: one of the owner's agents, the websites it is signed in to with a Revoke
 * button each, its settings, secret rotation, its public keys, deactivation and deletion. The buttons call the JSON
 * API (views/assets/portal.js). Another owner's agent is the same 404 page as one that does not exist.
 */
export default async function agentPages(app: FastifyInstance) {
  const services = app.services;
  const options = { schema: { hide: true }, config: { html: true } };

  // The list is the account's home.
  app.get('/account/agents', options, async (_request, reply) => reply.redirect('/account', 303));

  app.get('/account/agents/:id', options, async (request, reply) => {
    if (!request.owner) return reply.redirect('/account', 303);
    const id = agentId.safeParse((request.params as { id: string }).id);
    if (!id.success) throw new NotFound('no such agent');
    const [agent, settings] = await Promise.all([
      ownAgent(services, request.owner.user_id, id.data),
      services.store.owners.settings(request.owner.user_id),
    ]);
    // Read once the agent is known to be the owner's.
    const [keys, signingKeys] = await Promise.all([
      listAgentKeys(services, agent.agent_id),
      listAgentKeys(services, agent.agent_id, REQUEST_SIGNING_KEYS),
    ]);
    return renderAccount(request, reply, 'agent', {
      title: agent.name ?? 'Unnamed agent',
      nav: 'agents',
      agent,
      keys,
      signingKeys,
      policies: POLICY_CHOICES,
      shares: sharedInWords,
      ownerPolicy: settings?.approval_policy ?? 'never',
    });
  });
}
