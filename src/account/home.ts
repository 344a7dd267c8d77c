import type { FastifyInstance } from 'fastify';
import { listAgents } from '../owners/agents.js';
import { renderAccount } from './render.js';

/** GET /account: the sign-in form, or the signed-in owner's home: their agents, creating one, the kill switch. */
export default async function homePage(app: FastifyInstance) {
  const services = app.services;
  const { store } = services;
  app.get(
    '/account',
    {
      schema: { hide: true },
      config: { html: true },
    },
    async (request, reply) => {
      if (!request.owner) return renderAccount(request, reply, 'sign-in', { title: 'Sign in' });
      const userId = request.owner.user_id;
      const [settings, passkeys, agents, waiting] = await Promise.all([
        store.owners.settings(userId),
        store.passkeys.count(userId),
        listAgents(services, userId),
        store.approvals.pending(userId),
      ]);
      return renderAccount(request, reply, 'home', {
        title: 'Your account',
        nav: 'agents',
        settings,
        passkeys,
        agents,
        waiting: waiting.length,
        agentCreation: services.config.owners.agentCreation,
      });
    },
  );
}
