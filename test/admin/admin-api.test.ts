import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { ADMIN_TOKEN, CLIENT_VIEW, startTestServer, type TestServer } from '../helpers/server.js';

const hash = (secret: string) => createHash('sha256').update(secret).digest('base64url');

describe(`admin API (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const rows = async (table: 'clients' | 'agents' | 'users') =>
    (await server.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n;
  const row = async (table: 'clients' | 'agents', id: string) =>
    (await server.services.db.query<Record<string, unknown>>(`SELECT * FROM ${table} WHERE id = $1`, [id])).rows[0];

  /** The clear secret is in no column of the row; its SHA-256 (base64url) is the stored hash. */
  async function expectStoredAsHash(table: 'clients' | 'agents', id: string, secret: string) {
    const stored = await row(table, id);
    expect(JSON.stringify(stored)).not.toContain(secret);
    expect(stored.secret_hash).toBe(hash(secret));
  }

  describe('clients', () => {
    it('runs the full life cycle: create, get, list, patch, deactivate, activate, rotate, delete', async () => {
      const created = await server.adminCall('POST', '/admin/clients', {
        name: 'Shop',
        redirect_uris: ['https://shop.example/cb', 'http://localhost:8080/cb'],
      });
      expect(created.statusCode).toBe(201);
      expect(Object.keys(created.json).sort()).toEqual([...CLIENT_VIEW, 'client_secret'].sort());
      const { client_id: id, client_secret: secret } = created.json;
      expect(created.json).toMatchObject({
        name: 'Shop',
        redirect_uris: ['https://shop.example/cb', 'http://localhost:8080/cb'],
        active: true,
      });
      expect(new Date(created.json.created_at).toISOString()).toBe(created.json.created_at);
      expect(Buffer.from(secret.replace(/^aa_cs_/, ''), 'base64url').length).toBeGreaterThanOrEqual(32);
      await expectStoredAsHash('clients', id, secret);

      const got = await server.adminCall('GET', `/admin/clients/${id}`);
      expect(got.statusCode).toBe(200);
      const { client_secret: _, ...view } = created.json;
      expect(got.json).toEqual(view);

      const list = await server.adminCall('GET', '/admin/clients');
      expect(list.statusCode).toBe(200);
      expect(list.json.clients).toContainEqual(view);
      // No secret in any form (the method `client_secret_post` names one, holds none).
      expect(JSON.stringify(list.json).replaceAll('"client_secret_post"', '')).not.toMatch(/secret/);

      const patched = await server.adminCall('PATCH', `/admin/clients/${id}`, {
        name: 'Shop 2',
        redirect_uris: ['https://shop.example/new'],
      });
      expect(patched.statusCode).toBe(200);
      expect(patched.json).toEqual({ ...view, name: 'Shop 2', redirect_uris: ['https://shop.example/new'] });

      // Only the fields given change.
      const deactivated = await server.adminCall('PATCH', `/admin/clients/${id}`, { active: false });
      expect(deactivated.json).toEqual({ ...patched.json, active: false });
      expect((await row('clients', id)).active).toBe(false);
      const activated = await server.adminCall('PATCH', `/admin/clients/${id}`, { active: true });
      expect(activated.json).toEqual(patched.json);

      const rotated = await server.adminCall('POST', `/admin/clients/${id}/secret`);
      expect(rotated.statusCode).toBe(200);
      expect(rotated.json).toEqual({ ...patched.json, client_secret: expect.any(String) });
      expect(rotated.json.client_secret).not.toBe(secret);
      await expectStoredAsHash('clients', id, rotated.json.client_secret);
      expect((await row('clients', id)).secret_hash).not.toBe(hash(secret));

      const deleted = await server.adminCall('DELETE', `/admin/clients/${id}`);
      expect(deleted.statusCode).toBe(204);
      expect(await row('clients', id)).toBeUndefined();
      for (const [method, url, body] of [
        ['GET', `/admin/clients/${id}`],
        ['PATCH', `/admin/clients/${id}`, { active: true }],
        ['POST', `/admin/clients/${id}/secret`],
        ['DELETE', `/admin/clients/${id}`],
      ] as const) {
        const res = await server.adminCall(method, url, body);
        expect(res.statusCode, `${method} ${url}`).toBe(404);
        expect(res.json).toEqual({ error: 'not_found', error_description: `no client with id ${id}` });
      }
    });

    it('accepts https and http on localhost, 127.0.0.1 and [::1]', async () => {
      const uris = ['https://a.example/cb?x=1', 'http://localhost/cb', 'http://127.0.0.1:9000/cb', 'http://[::1]:3000/cb'];
      const res = await server.adminCall('POST', '/admin/clients', { name: 'Local', redirect_uris: uris });
      expect(res.statusCode).toBe(201);
      expect(res.json.redirect_uris).toEqual(uris);
    });

    const refusals: [string, unknown, string][] = [
      ['a relative redirect URI', { name: 'S', redirect_uris: ['/callback'] }, 'redirect_uris'],
      ['a redirect URI with a fragment', { name: 'S', redirect_uris: ['https://shop.example/cb#x'] }, 'redirect_uris'],
      ['http off localhost', { name: 'S', redirect_uris: ['http://shop.example/cb'] }, 'redirect_uris'],
      ['another scheme', { name: 'S', redirect_uris: ['ftp://shop.example/cb'] }, 'redirect_uris'],
      ['no redirect URI', { name: 'S', redirect_uris: [] }, 'redirect_uris'],
      ['a missing name', { redirect_uris: ['https://shop.example/cb'] }, 'name'],
      ['a blank name', { name: '  ', redirect_uris: ['https://shop.example/cb'] }, 'name'],
      ['a name of the wrong type', { name: 42, redirect_uris: ['https://shop.example/cb'] }, 'name'],
      ['redirect_uris as a string', { name: 'S', redirect_uris: 'https://shop.example/cb' }, 'redirect_uris'],
      ['an unknown field', { name: 'S', redirect_uris: ['https://shop.example/cb'], secret: 'x' }, 'secret'],
      ['an empty body', {}, 'name'],
    ];
    for (const [what, body, field] of refusals) {
      it(`refuses ${what} with a 400 naming ${field}, writing nothing`, async () => {
        const before = await rows('clients');
        const res = await server.adminCall('POST', '/admin/clients', body);
        expect(res.statusCode).toBe(400);
        expect(res.json.error).toBe('invalid_request');
        expect(res.json.error_description).toContain(field);
        expect(await rows('clients')).toBe(before);
      });
    }

    it('refuses bad PATCH bodies and leaves the client unchanged', async () => {
      const { client_id: id } = await server.createClient();
      const before = await row('clients', id);
      for (const [body, field] of [
        [
          {},
          'name, redirect_uris, id_token_signed_response_alg, backchannel_logout_uri, dpop_bound_access_tokens, owner_sign_in, dpop_nonce_required, active',
        ],
        [{ active: 'yes' }, 'active'],
        [{ redirect_uris: ['http://evil.example/cb'] }, 'redirect_uris'],
        [{ name: null }, 'name'],
        [{ email: 'a@b.example' }, 'email'],
      ] as const) {
        const res = await server.adminCall('PATCH', `/admin/clients/${id}`, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json.error_description).toContain(field);
      }
      expect(await row('clients', id)).toEqual(before);
    });

    it('refuses a body that is not JSON', async () => {
      const before = await rows('clients');
      const res = await server.admin.inject({
        method: 'POST',
        url: '/admin/clients',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        payload: '{"name": ',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_request');
      expect(await rows('clients')).toBe(before);
    });
  });

  describe('agents', () => {
    it('runs the full life cycle: create, get, list, patch, deactivate, activate, rotate, delete', async () => {
      const created = await server.adminCall('POST', '/admin/agents', { email: 'owner@example.com', name: 'Claude' });
      expect(created.statusCode).toBe(201);
      expect(Object.keys(created.json).sort()).toEqual(
        ['active', 'agent_id', 'agent_secret', 'client_id', 'created_at', 'email', 'kind', 'name', 'secret_enabled'].sort(),
      );
      expect(created.json).toMatchObject({ email: 'owner@example.com', name: 'Claude', active: true });
      const { agent_id: id, agent_secret: secret } = created.json;
      await expectStoredAsHash('agents', id, secret);

      const { agent_secret: _, ...view } = created.json;
      expect((await server.adminCall('GET', `/admin/agents/${id}`)).json).toEqual(view);
      const list = await server.adminCall('GET', '/admin/agents');
      expect(list.json.agents).toContainEqual(view);
      expect(JSON.stringify(list.json)).not.toMatch(/secret(?!_enabled)/);

      const renamed = await server.adminCall('PATCH', `/admin/agents/${id}`, { name: 'Claude 2' });
      expect(renamed.json).toEqual({ ...view, name: 'Claude 2' });
      const cleared = await server.adminCall('PATCH', `/admin/agents/${id}`, { name: null });
      expect(cleared.json).toEqual({ ...view, name: null });

      expect((await server.adminCall('PATCH', `/admin/agents/${id}`, { active: false })).json.active).toBe(false);
      expect((await row('agents', id)).active).toBe(false);
      expect((await server.adminCall('PATCH', `/admin/agents/${id}`, { active: true })).json).toEqual(cleared.json);

      const rotated = await server.adminCall('POST', `/admin/agents/${id}/secret`);
      expect(rotated.statusCode).toBe(200);
      expect(rotated.json).toEqual({ ...cleared.json, agent_secret: expect.any(String) });
      expect(rotated.json.agent_secret).not.toBe(secret);
      await expectStoredAsHash('agents', id, rotated.json.agent_secret);

      expect((await server.adminCall('DELETE', `/admin/agents/${id}`)).statusCode).toBe(204);
      expect(await row('agents', id)).toBeUndefined();
      const gone = await server.adminCall('GET', `/admin/agents/${id}`);
      expect(gone.statusCode).toBe(404);
      expect(gone.json).toEqual({ error: 'not_found', error_description: `no agent with id ${id}` });
      expect((await server.adminCall('DELETE', `/admin/agents/${id}`)).statusCode).toBe(404);
    });

    it('gives agents of the same email, in any case, one user record', async () => {
      const usersBefore = await rows('users');
      const first = await server.adminCall('POST', '/admin/agents', { email: 'Shared.Owner@Example.com' });
      const second = await server.adminCall('POST', '/admin/agents', { email: 'shared.owner@example.COM', name: 'Second' });
      expect([first.statusCode, second.statusCode]).toEqual([201, 201]);
      expect(first.json.name).toBeNull();
      expect(second.json.agent_id).not.toBe(first.json.agent_id);
      expect(await rows('users')).toBe(usersBefore + 1);
      expect((await row('agents', first.json.agent_id)).user_id).toBe((await row('agents', second.json.agent_id)).user_id);
      // The user record keeps the address as first registered.
      expect(second.json.email).toBe('Shared.Owner@Example.com');
    });

    const refusals: [string, unknown, string][] = [
      ['an invalid email', { email: 'not-an-email' }, 'email'],
      ['a missing email', { name: 'A' }, 'email'],
      ['an email of the wrong type', { email: ['a@b.example'] }, 'email'],
      ['a name of the wrong type', { email: 'a@b.example', name: 5 }, 'name'],
      ['an unknown field', { email: 'a@b.example', agent_secret: 'mine' }, 'agent_secret'],
      ['an empty body', {}, 'email'],
    ];
    for (const [what, body, field] of refusals) {
      it(`refuses ${what} with a 400 naming ${field}, writing nothing`, async () => {
        const [agents, users] = [await rows('agents'), await rows('users')];
        const res = await server.adminCall('POST', '/admin/agents', body);
        expect(res.statusCode).toBe(400);
        expect(res.json.error).toBe('invalid_request');
        expect(res.json.error_description).toContain(field);
        expect([await rows('agents'), await rows('users')]).toEqual([agents, users]);
      });
    }

    it('refuses bad PATCH bodies (email is fixed) and leaves the agent unchanged', async () => {
      const { agent_id: id } = await server.createAgent();
      const before = await row('agents', id);
      for (const [body, field] of [
        [{}, 'name, active'],
        [{ email: 'other@example.com' }, 'email'],
        [{ active: 1 }, 'active'],
      ] as const) {
        const res = await server.adminCall('PATCH', `/admin/agents/${id}`, body);
        expect(res.statusCode, JSON.stringify(body)).toBe(400);
        expect(res.json.error_description).toContain(field);
      }
      expect(await row('agents', id)).toEqual(before);
    });
  });

  describe('admin token', () => {
    const calls = [
      ['GET', '/admin/clients'],
      ['POST', '/admin/clients'],
      ['GET', '/admin/agents/whatever'],
      ['PATCH', '/admin/agents/whatever'],
      ['POST', '/admin/agents/whatever/secret'],
      ['DELETE', '/admin/clients/whatever'],
    ] as const;
    const headers: [string, Record<string, string>][] = [
      ['no Authorization header', {}],
      ['a wrong token', { authorization: `Bearer ${ADMIN_TOKEN}x` }],
      ['a token without the Bearer scheme', { authorization: ADMIN_TOKEN }],
      ['Basic credentials', { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` }],
    ];
    for (const [what, header] of headers) {
      it(`answers 401 to ${what}, before reading the body`, async () => {
        const before = await rows('clients');
        for (const [method, url] of calls) {
          const res = await server.admin.inject({
            method,
            url,
            headers: header,
            ...(method === 'GET' || method === 'DELETE' ? {} : { payload: { name: 'S', redirect_uris: ['https://s.example/cb'] } }),
          });
          expect(res.statusCode, `${method} ${url}`).toBe(401);
          expect(res.json()).toEqual({ error: 'unauthorized', error_description: 'missing or invalid admin token' });
          expect(res.headers['www-authenticate']).toBe('Bearer');
        }
        expect(await rows('clients')).toBe(before);
      });
    }

    it('is not served on the public listener', async () => {
      const res = await server.app.inject({
        method: 'GET',
        url: '/admin/clients',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(res.statusCode).toBe(404);
    });
  });
});
