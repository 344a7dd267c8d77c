import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { found, revokeGrants } from '../admin/grants.js';
import { NotFound } from '../errors.js';
import type { Store } from '../store/index.js';
import { idPattern, parseForm, redirectWith } from './render.js';

type Form = Record<string, string | undefined>;
export const form = (request: FastifyRequest) => (request.body ?? {}) as Form;

type Noun = 'client' | 'agent';

/** The id in the path; anything that is not an id of ours is a 404 like an unknown one (and safe in a redirect). */
export function idParam(request: FastifyRequest, noun: Noun): string {
  const { id } = request.params as { id: string };
  if (!idPattern.test(id)) throw new NotFound(`no ${noun} with id ${id}`);
  return id;
}

interface ResourceActions {
  /** Path segment under /console: "websites". */
  path: string;
  /** The admin API's name of the record, and its revocation level. */
  noun: Noun;
  patch: z.ZodType;
  store(store: Store): {
    update(id: string, patch: never): Promise<unknown>;
    rotateSecret(id: string): Promise<Record<string, unknown> | undefined>;
  };
  secretField: string;
  secretLabel: string;
  notices: { activated: string; deactivated: string; revoked(count: number): string };
}

export const grantCount = (count: number) => `${count} grant${count === 1 ? '' : 's'}`;

/**
 * What websites and agents share on their page: deactivate and activate, rotate the secret (shown
 * once, on the page the browser is sent back to), revoke every grant, each through the admin API's code.
 */
export function resourceActions(options: ResourceActions) {
  return async function resourceActionRoutes(app: FastifyInstance) {
    const records = options.store(app.services.store);
    const page = { config: { html: true } };
    const back = (id: string) => `/console/${options.path}/${id}`;

    app.post(`/${options.path}/:id/active`, page, async (request, reply) => {
      const id = idParam(request, options.noun);
      const active = form(request).active === 'true';
      found(await records.update(id, parseForm(options.patch, { active }, back(id)) as never), options.noun, id);
      return redirectWith(request, reply, back(id), { notice: active ? options.notices.activated : options.notices.deactivated });
    });

    app.post(`/${options.path}/:id/secret`, page, async (request, reply) => {
      const id = idParam(request, options.noun);
      const rotated = found(await records.rotateSecret(id), options.noun, id);
      return redirectWith(request, reply, back(id), {
        notice: 'New secret issued; the old one no longer works.',
        secret: { label: options.secretLabel, value: String(rotated[options.secretField]) },
      });
    });

    app.post(`/${options.path}/:id/revoke-grants`, page, async (request, reply) => {
      const id = idParam(request, options.noun);
      const { revoked } = await revokeGrants(app.services, { log: request.log }, options.noun, id);
      return redirectWith(request, reply, back(id), { notice: options.notices.revoked(revoked) });
    });
  };
}
