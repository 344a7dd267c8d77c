import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { found, revokeGrants } from '../admin/grants.js';
import { recordAdminAction } from '../admin/resource.js';
import { NotFound } from '../errors.js';
import type { EventContext } from '../events/emitter.js';
import type { Services } from '../services.js';
import type { GrantRecord } from '../store/grant-records.js';
import type { Store } from '../store/index.js';
import { idPattern, parseForm, redirectWith } from './render.js';

type Form = Record<string, string | undefined>;
export const form = (request: FastifyRequest) => (request.body ?? {}) as Form;

/**
 * Each website's name and the host its first redirect URI points to, by client id: two websites of
 * one name are told apart by where they take the code, as the sign-in page shows it.
 */
export async function websiteDirectory(store: Store): Promise<Map<string, { name: string; host: string }>> {
  const clients = await store.clients.list();
  return new Map(clients.map((c) => [c.client_id, { name: c.name, host: new URL(c.redirect_uris[0]).host }]));
}

/** The grants of one agent at one website: how many, how many still work, the newest first. */
export interface GrantGroup {
  agent_id: string;
  client_id: string;
  client_name: string;
  website_host?: string;
  grants: GrantRecord[];
  live: number;
  newest: Date;
  models: string[];
}

/**
 * Grants grouped by agent and website, as the owners' portal shows them (ten sign-ins of one agent at
 * one website are one row), with the host of their website (see websiteDirectory); newest first.
 */
export async function grantGroups(store: Store, grants: GrantRecord[]): Promise<GrantGroup[]> {
  const websites = await websiteDirectory(store);
  const groups = new Map<string, GrantGroup>();
  for (const g of [...grants].sort((a, b) => b.created_at.getTime() - a.created_at.getTime())) {
    const key = `${g.agent_id} ${g.client_id}`;
    const group = groups.get(key) ?? {
      agent_id: g.agent_id,
      client_id: g.client_id,
      client_name: g.client_name,
      website_host: websites.get(g.client_id)?.host,
      grants: [],
      live: 0,
      newest: g.created_at,
      models: [],
    };
    group.grants.push(g);
    if (!g.revoked_at) group.live += 1;
    if (!group.models.includes(g.model)) group.models.push(g.model);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** A registration form the store refused: why, and the fields as they were typed, to show again. */
export interface Registration {
  problem: string;
  values: Form;
}

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
  records(
    services: Services,
    context: EventContext,
  ): {
    update(id: string, patch: never): Promise<unknown>;
    rotateSecret(id: string, revokeGrants: boolean): Promise<Record<string, unknown> | undefined>;
  };
  secretField: string;
  secretLabel: string;
  /** `rotated`: what stops working after a rotation, with the grants revoked or not. */
  notices: { activated: string; deactivated: string; rotated(revokedGrants: boolean): string; revoked(count: number): string };
}

export const grantCount = (count: number) => `${count} grant${count === 1 ? '' : 's'}`;

/**
 * What websites and agents share on their page: deactivate and activate, rotate the secret (shown
 * once, on the page the browser is sent back to), revoke every grant, each through the admin API's code.
 */
export function resourceActions(options: ResourceActions) {
  return async function resourceActionRoutes(app: FastifyInstance) {
    const records = (request: FastifyRequest) => options.records(app.services, { log: request.log });
    const page = { config: { html: true } };
    const back = (id: string) => `/console/${options.path}/${id}`;

    app.post(`/${options.path}/:id/active`, page, async (request, reply) => {
      const id = idParam(request, options.noun);
      const active = form(request).active === 'true';
      found(await records(request).update(id, parseForm(options.patch, { active }, back(id)) as never), options.noun, id);
      await recordAdminAction(app.services, options.noun, 'updated', id, { fields: ['active'] });
      return redirectWith(request, reply, back(id), { notice: active ? options.notices.activated : options.notices.deactivated });
    });

    app.post(`/${options.path}/:id/secret`, page, async (request, reply) => {
      const id = idParam(request, options.noun);
      // The form's checkbox, checked by default: a browser sends it only when it is still checked.
      const revokeGrants = form(request).revoke_grants === 'true';
      const rotated = found(await records(request).rotateSecret(id, revokeGrants), options.noun, id);
      await recordAdminAction(app.services, options.noun, 'secret_rotated', id, { revoke_grants: revokeGrants });
      return redirectWith(request, reply, back(id), {
        notice: options.notices.rotated(revokeGrants),
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
