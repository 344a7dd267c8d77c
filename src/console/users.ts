import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { revokeGrants, userSignIns } from '../admin/grants.js';
import { NotFound } from '../errors.js';
import { parseForm, redirectWith, renderConsole } from './render.js';
import { grantCount, type GrantGroup, grantGroups } from './resource.js';

const emailForm = z.object({ email: z.email().max(320) });
const userPage = (email: string) => `/console/users?email=${encodeURIComponent(email)}`;

/** Users: all of them, then one by email with their agents and every sign-in of those agents; revoke them all. */
export default async function userPages(app: FastifyInstance) {
  const page = { config: { html: true } };

  app.get('/users', page, async (request, reply) => {
    const email = String((request.query as Record<string, unknown>).email ?? '').trim();
    const data = {
      title: 'Users',
      email,
      user: undefined as (Omit<Awaited<ReturnType<typeof userSignIns>>, 'grants'> & { grants: GrantGroup[] }) | undefined,
      users: email ? [] : await app.services.store.agents.users(),
      message: '',
    };
    if (email) {
      if (!emailForm.safeParse({ email }).success) data.message = 'That is not an email address.';
      else {
        try {
          const [user, last] = await Promise.all([userSignIns(app.services.store, email), app.services.store.grantRecords.lastSignIns()]);
          data.user = {
            ...user,
            agents: user.agents.map((a) => ({ ...a, lastSignIn: last.agents.get(a.agent_id) })),
            grants: await grantGroups(app.services.store, user.grants),
          };
        } catch (err) {
          if (!(err instanceof NotFound)) throw err;
          data.message = `No user has the email ${email}.`;
        }
      }
    }
    return renderConsole(request, reply, 'users', data);
  });

  app.post('/users/revoke-grants', page, async (request: FastifyRequest, reply) => {
    const { email } = parseForm(emailForm, { email: (request.body as Record<string, string>)?.email }, '/console/users');
    const { revoked } = await revokeGrants(app.services, { log: request.log }, 'user', email);
    return redirectWith(request, reply, userPage(email), {
      notice: `${grantCount(revoked)} revoked; every website has lost this user's agents.`,
    });
  });
}
