import type { FastifyInstance } from 'fastify';
import { checkLogoutUri, clientCreate, clientPatch } from '../admin/clients.js';
import { found } from '../admin/grants.js';
import { recordAdminAction } from '../admin/resource.js';
import { InvalidClientMetadata, InvalidRequest } from '../errors.js';
import { DEFAULT_SIGNING_ALG } from '../protocol/signing.js';
import { clientWrites } from '../tokens/revocation.js';
import { listPage } from './home.js';
import { firstProblem, FormProblem, parseForm, redirectWith, renderConsole } from './render.js';
import { form, grantCount, idParam, resourceActions } from './resource.js';

const lines = (value: string | undefined) =>
  (value ?? '')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);

/** Websites (OAuth clients): list, register, edit, switch off and on, rotate the secret, revoke all grants. */
export default async function websitePages(app: FastifyInstance) {
  const { clients, grantRecords, logoutDeliveries } = app.services.store;
  const { config } = app.services;
  const page = { config: { html: true } };

  const list = listPage(app, 'websites', 'Websites', 'clients');

  app.get('/websites', page, (request, reply) => list(request, reply));

  app.post('/websites', page, async (request, reply) => {
    const body = form(request);
    const parsed = clientCreate.safeParse({ name: body.name, redirect_uris: lines(body.redirect_uris) });
    // Refused: the same page again, with the form as it was typed, so that nothing is typed twice.
    if (!parsed.success) return list(request, reply.code(400), { problem: firstProblem(parsed.error), values: body });
    const created = await clients.create(parsed.data);
    await recordAdminAction(app.services, 'client', 'created', created.client_id);
    return redirectWith(request, reply, `/console/websites/${created.client_id}`, {
      notice: `Website “${created.name}” registered.`,
      secret: { label: 'Client secret', value: created.client_secret },
    });
  });

  app.get('/websites/:id', page, async (request, reply) => {
    const id = idParam(request, 'client');
    const client = found(await clients.get(id), 'client', id);
    return renderConsole(request, reply, 'website', {
      title: client.name,
      nav: 'websites',
      client,
      oidc: config.idTokenSigningAlg !== undefined,
      defaultAlg: DEFAULT_SIGNING_ALG,
      agents: (await grantRecords.activeAgentsOf(id)) ?? [],
      deliveries: await logoutDeliveries.list({ clientId: id, limit: 20 }),
      failures: await logoutDeliveries.list({ clientId: id, status: 'failed', limit: 20 }),
    });
  });

  app.post('/websites/:id', page, async (request, reply) => {
    const id = idParam(request, 'client');
    const body = form(request);
    const back = `/console/websites/${id}`;
    const patch = parseForm(
      clientPatch,
      {
        name: body.name,
        redirect_uris: lines(body.redirect_uris),
        // An unchecked box sends nothing.
        dpop_bound_access_tokens: body.dpop_bound_access_tokens === 'true',
        owner_sign_in: body.owner_sign_in === 'true',
        dpop_nonce_required: body.dpop_nonce_required === 'true',
        // OpenID Connect mode's fields; empty clears them (the default algorithm, no back-channel logout).
        ...(config.idTokenSigningAlg
          ? {
              id_token_signed_response_alg: body.id_token_signed_response_alg || null,
              backchannel_logout_uri: body.backchannel_logout_uri?.trim() || null,
            }
          : {}),
      },
      back,
    );
    await checkLogoutUri(config, patch.backchannel_logout_uri).catch((err: unknown) => {
      throw err instanceof InvalidRequest || err instanceof InvalidClientMetadata ? new FormProblem(err.description, back) : err;
    });
    found(await clients.update(id, patch), 'client', id);
    await recordAdminAction(app.services, 'client', 'updated', id, { fields: Object.keys(patch) });
    return redirectWith(request, reply, back, { notice: 'Saved.' });
  });

  await app.register(
    resourceActions({
      path: 'websites',
      noun: 'client',
      patch: clientPatch,
      records: (services, context) => clientWrites(services, context),
      secretField: 'client_secret',
      secretLabel: 'Client secret',
      notices: {
        activated: 'Website activated: sign-ins work again.',
        deactivated: 'Website deactivated: no sign-in, token or refresh works while it is off.',
        rotated: (revoked) =>
          revoked
            ? 'New secret issued. The old secret, every token this website holds and its sign-ins in flight no longer work: agents must sign in to it again.'
            : 'New secret issued. Only the old secret no longer works: tokens the website holds keep working (refreshing them needs the new secret).',
        revoked: (count) => `${grantCount(count)} revoked.`,
      },
    }),
  );
}
