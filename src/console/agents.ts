import type { FastifyInstance } from 'fastify';
import { agentCreate, agentPatch } from '../admin/agents.js';
import { found, revokeGrants } from '../admin/grants.js';
import { recordAdminAction } from '../admin/resource.js';
import { addAgentKey, ASSERTION_KEYS, deleteAgentKey, kidSchema, listAgentKeys, REQUEST_SIGNING_KEYS } from '../agent-keys/registration.js';
import { OAuthError } from '../errors.js';
import { agentWrites } from '../tokens/revocation.js';
import { listPage } from './home.js';
import { firstProblem, FormProblem, parseForm, redirectWith, renderConsole } from './render.js';
import { form, grantCount, grantGroups, idParam, resourceActions } from './resource.js';

// Where a per-grant revoke returns to: a console page, never anywhere else.
const BACK = /^\/console\/(agents\/[\w-]{1,200}|users\?email=[\w.%+-]{1,400})$/;

/** Agents: list, register, switch off and on, rotate the secret, the kill switch, their keys, and their grants. */
export default async function agentPages(app: FastifyInstance) {
  const { agents, grantRecords } = app.services.store;
  const page = { config: { html: true } };

  const list = listPage(app, 'agents', 'Agents', 'agents');

  app.get('/agents', page, (request, reply) => list(request, reply));

  app.post('/agents', page, async (request, reply) => {
    const body = form(request);
    const parsed = agentCreate.safeParse({ email: body.email, name: body.name?.trim() || undefined });
    // Refused: the same page again, with the form as it was typed.
    if (!parsed.success) return list(request, reply.code(400), { problem: firstProblem(parsed.error), values: body });
    const created = await agents.create(parsed.data);
    await recordAdminAction(app.services, 'agent', 'created', created.agent_id);
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
      keys: await listAgentKeys(app.services, id),
      signingKeys: await listAgentKeys(app.services, id, REQUEST_SIGNING_KEYS),
      grants: await grantGroups(app.services.store, (await grantRecords.ofAgent(id)) ?? []),
    });
  });

  // Revoke-grants here is the kill switch: every website loses this agent's tokens.
  await app.register(
    resourceActions({
      path: 'agents',
      noun: 'agent',
      patch: agentPatch,
      records: (services, context) => agentWrites(services, context),
      secretField: 'agent_secret',
      secretLabel: 'Agent secret',
      notices: {
        activated: 'Agent activated.',
        deactivated:
          'Agent deactivated: it cannot sign in, and its grants and sign-ins in flight have ended (websites with a logout URI are told); ' +
          'activating it again brings none of them back.',
        rotated: (revoked) =>
          revoked
            ? 'New secret issued. The old secret, every token of this agent at every website and every sign-in in flight no longer work: websites must sign it in again.'
            : 'New secret issued. Only the old secret no longer works: tokens already issued to websites keep working until they expire or are revoked.',
        revoked: (count) => `Kill switch: ${grantCount(count)} revoked; every website has lost this agent's tokens.`,
      },
    }),
  );

  // Keys and the secret switch: the admin API's functions, their refusals shown on the agent's page.
  const keyAction = async (back: string, action: () => Promise<unknown>) => {
    try {
      await action();
    } catch (err) {
      if (err instanceof OAuthError && err.statusCode < 500) throw new FormProblem(err.description, back);
      throw err;
    }
  };

  // Both kinds of key, each with what its addition and deletion change for the agent.
  const kinds = [
    { kind: ASSERTION_KEYS, added: 'the agent can sign in with it now', deleted: 'assertions it signs are refused from now on' },
    {
      kind: REQUEST_SIGNING_KEYS,
      added: 'the directory lists it now, and websites accept the requests it signs',
      deleted: 'websites refuse the requests it signs once they reread the directory',
    },
  ];
  for (const { kind, added, deleted } of kinds) {
    app.post(`/agents/:id/${kind.path}`, page, async (request, reply) => {
      const id = idParam(request, 'agent');
      const back = `/console/agents/${id}`;
      let jwk: unknown;
      try {
        jwk = JSON.parse(form(request).jwk ?? '');
      } catch {
        throw new FormProblem('public key: paste a JWK, a JSON object such as {"kty":"OKP","crv":"Ed25519","x":"…"}', back);
      }
      if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk)) throw new FormProblem('public key: a JWK is a JSON object', back);
      let kid = '';
      await keyAction(back, async () => ({ kid } = await addAgentKey(app.services, { actor: 'admin' }, id, jwk as Record<string, unknown>, kind)));
      return redirectWith(request, reply, back, { notice: `Key ${kid} added: ${added}.` });
    });

    app.post(`/agents/:id/${kind.path}/:kid/delete`, page, async (request, reply) => {
      const id = idParam(request, 'agent');
      const back = `/console/agents/${id}`;
      const kid = kidSchema.safeParse((request.params as { kid: string }).kid);
      if (!kid.success) throw new FormProblem('unknown key', back);
      await keyAction(back, () => deleteAgentKey(app.services, { actor: 'admin' }, id, kid.data, kind));
      return redirectWith(request, reply, back, { notice: `Key ${kid.data} deleted: ${deleted}.` });
    });
  }

  app.post('/agents/:id/secret-enabled', page, async (request, reply) => {
    const id = idParam(request, 'agent');
    const back = `/console/agents/${id}`;
    const enabled = form(request).secret_enabled === 'true';
    const patch = parseForm(agentPatch, { secret_enabled: enabled }, back);
    found(await agentWrites(app.services, { log: request.log }).update(id, patch), 'agent', id);
    await recordAdminAction(app.services, 'agent', 'updated', id, { fields: ['secret_enabled'] });
    return redirectWith(request, reply, back, {
      notice: enabled
        ? 'Secret allowed again: the agent may sign in with its secret or a key.'
        : 'Key-only: the agent’s secret is refused from now on.',
    });
  });

  app.post('/grants/:id/revoke', page, async (request, reply) => {
    const { id } = request.params as { id: string };
    const back = form(request).back ?? '';
    if (!BACK.test(back)) throw new FormProblem('unknown page to return to', '/console');
    await revokeGrants(app.services, { log: request.log }, 'grant', id);
    return redirectWith(request, reply, back, { notice: 'Grant revoked: that website has lost the agent’s tokens.' });
  });
}
