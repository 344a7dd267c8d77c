import type { FastifyInstance } from 'fastify';
import { agentCreate, agentPatch } from '../admin/agents.js';
import { found, revokeGrants } from '../admin/grants.js';
import { agentRecords } from '../tokens/revocation.js';
import { listPage } from './home.js';
import { firstProblem, FormProblem, redirectWith, renderConsole } from './render.js';
import { form, grantCount, idParam, resourceActions, withWebsiteHosts } from './resource.js';

// Where a per-grant revoke returns to: a console page, never anywhere else.
const BACK = /^\/console\/(agents\/[\w-]{1,200}|users\?email=[\w.%+-]{1,400})$/;

/** Agents: list, register, switch off and on, rotate the secret, the kill switch, and their grants. */
export default async function agentPages(app: FastifyInstance) {
  const { agents, grantAdmin } = app.services.store;
  const page = { config: { html: true } };

  const list = listPage(app, 'agents', 'Agents', 'agents');

  app.get('/agents', page, (request, reply) => list(request, reply));

  app.post('/agents', page, async (request, reply) => {
    const body = form(request);
    const parsed = agentCreate.safeParse({ email: body.email, name: body.name?.trim() || undefined });
    // Refused: the same page again, with the form as it was typed.
    if (!parsed.success) return list(request, reply.code(400), { problem: firstProblem(parsed.error), values: body });
    const created = await agents.create(parsed.data);
    return redirectWith(request, reply, `/console/agents/${created.agent_id}`, {
      notice: `Agent registered for ${created.email}.`,
      secret: { label: 'Agent secret', value: created.agent_secret },
    });
  });

  app.get('/agents/:id', page, async (request, reply) => {
    const id = idParam(request, 'agent');
    const agent = found(await agents.get(id), 'agent', id);
    return renderConsole(request, reply, 'agent', {
      title: agent.name ?? agent.agent_id,
      nav: 'agents',
      agent,
      grants: await withWebsiteHosts(app.services.store, (await grantAdmin.ofAgent(id)) ?? []),
    });
  });

  // Revoke-grants here is the kill switch: every website loses this agent's tokens.
  await app.register(
    resourceActions({
      path: 'agents',
      noun: 'agent',
      patch: agentPatch,
      records: (services, context) => agentRecords(services, context),
      secretField: 'agent_secret',
      secretLabel: 'Agent secret',
      notices: {
        activated: 'Agent activated.',
        deactivated: 'Agent deactivated: it cannot sign in, and its grants have ended (websites with a logout URI are told).',
        revoked: (count) => `Kill switch: ${grantCount(count)} revoked; every website has lost this agent's tokens.`,
      },
    }),
  );

  app.post('/grants/:id/revoke', page, async (request, reply) => {
    const { id } = request.params as { id: string };
    const back = form(request).back ?? '';
    if (!BACK.test(back)) throw new FormProblem('unknown page to return to', '/console');
    await revokeGrants(app.services, { log: request.log }, 'grant', id);
    return redirectWith(request, reply, back, { notice: 'Grant revoked: that website has lost the agent’s tokens.' });
  });
}
