import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from './helpers/database.js';
import {
  authorization,
  bodies,
  encodeBody,
  expectJsonError,
  expectReached,
  fuzz,
  FUZZ_TIMEOUT,
  hostile,
  mostlyValid,
  nastyString,
  pct,
  ref,
  type Body,
  type FieldSpec,
  type Fixtures,
} from './helpers/fuzz.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './helpers/server.js';

interface AdminInput {
  method: string;
  id: unknown;
  /** A path segment as is, percent-encoding errors and all. */
  rawId: string | null;
  body: Body;
  authorization: unknown;
}

const validRedirectUri = fc.oneof(
  fc.constantFrom('https://shop.example/cb', 'http://localhost:8080/cb', 'http://127.0.0.1/cb', 'http://[::1]:3000/cb', 'https://例え.jp/cb', 'HTTPS://SHOP.EXAMPLE/CB'),
  fc.webUrl({ validSchemes: ['https'], withQueryParameters: true }),
);
const badRedirectUri = fc.oneof(
  fc.constantFrom(
    'http://evil.example/cb', 'https://shop.example/cb#frag', 'javascript:alert(1)', 'https://', '//shop.example/cb', 'shop.example/cb',
    'https://[::1', 'http://localhost.evil.example/cb', 'https://exa mple.com/', 'data:text/html,x', 'file:///etc/passwd',
    `https://shop.example/${'x'.repeat(2000)}`, 'https://shop.example/\u0000', 'http://0x7f.1/cb', 'http://[::ffff:127.0.0.1]/cb',
  ),
  nastyString,
);
const redirectUris: FieldSpec[string] = [
  fc.array(validRedirectUri, { minLength: 1, maxLength: 3 }),
  fc.oneof(
    fc.array(fc.oneof(validRedirectUri, badRedirectUri), { minLength: 1, maxLength: 3 }),
    fc.constant([]),
    fc.array(fc.constant('https://shop.example/cb'), { minLength: 21, maxLength: 21 }),
    hostile({ json: true }),
  ),
];
const name: FieldSpec[string] = [fc.oneof(fc.constant('Shop'), fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim().length > 0)), hostile({ json: true })];
const active: FieldSpec[string] = [fc.boolean(), hostile({ json: true })];
const email: FieldSpec[string] = [
  fc.oneof(fc.emailAddress(), fc.constantFrom('owner@example.com', 'OWNER@Example.COM', 'o.w+ner@sub.example.org')),
  fc.oneof(fc.constantFrom('owner', '@example.com', 'owner@', 'a@b', 'owner@example.com\u0000', `${'a'.repeat(320)}@example.com`, 'ü@example.com'), hostile({ json: true })),
];

// Generated calls to the admin API's writes; see helpers/fuzz.ts for what every run asserts.
describe(`fuzzing the admin API (${storeName})`, { timeout: FUZZ_TIMEOUT }, () => {
  let server: TestServer;
  let fixtures: Fixtures;

  beforeAll(async () => {
    server = await startTestServer();
    const [client, client2] = [await server.createClient(), await server.createClient()];
    const [agent, agent2] = [await server.createAgent(), await server.createAgent()];
    fixtures = {
      admin_token: `Bearer ${ADMIN_TOKEN}`,
      client_id: client.client_id,
      client2_id: client2.client_id,
      agent_id: agent.agent_id,
      agent2_id: agent2.agent_id,
    };
  });
  afterAll(() => server.close());

  const adminToken = fc.oneof(
    { weight: 12, arbitrary: ref('admin_token') },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.oneof(fc.constantFrom(`bearer ${ADMIN_TOKEN}`, `Bearer  ${ADMIN_TOKEN}`, `Basic ${ADMIN_TOKEN}`, ADMIN_TOKEN), hostile({ like: 'admin_token' })) },
  );
  // Wrong methods that write nothing on the resource paths (DELETE would remove the fixtures).
  const method = (usual: string) => fc.oneof({ weight: 14, arbitrary: fc.constant(usual) }, fc.constantFrom('PUT', 'OPTIONS'));

  function adminFuzz(path: string, usual: 'POST' | 'PATCH', fields: FieldSpec, idFixtures: string[] = []) {
    return fuzz({
      app: server.admin,
      db: server.services.db,
      numRuns: 250,
      fixtures: () => fixtures,
      arbitrary: fc.record({
        method: method(usual),
        id: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...(idFixtures.length ? idFixtures : ['client_id'])).chain(ref) }, hostile({ like: idFixtures[0] ?? 'client_id' })),
        rawId: fc.option(fc.constantFrom('%', '%zz', '%E0%A4%A', '%C0%80', '%00', '.', '..', '', 'a/b', '%2F', 'x?y=%', 'a'.repeat(201)), { freq: 8 }),
        body: bodies(mostlyValid(fields), 'json'),
        authorization: adminToken,
      }),
      request: ({ method: m, id, rawId, body, authorization: header }: AdminInput) => {
        const encoded = m === 'OPTIONS' ? { headers: {} } : encodeBody(body);
        const segment = rawId ?? pct(typeof id === 'string' ? id : (JSON.stringify(id) ?? ''));
        const url = idFixtures.length ? `${path}/${segment}` : path;
        return { method: m as 'POST', url, ...encoded, headers: { ...encoded.headers, ...authorization(header) } };
      },
      check: ({ res }) => {
        if (res.statusCode >= 400) return expectJsonError(res);
        expect([200, 201]).toContain(res.statusCode);
        expect(Object.keys(res.json()).some((k) => k.includes('hash'))).toBe(false);
      },
    });
  }

  // Regression (found by this file): the router's refusals came in Fastify's own format, the long one echoing the path.
  it('an over-long or badly encoded path parameter gets the error format', async () => {
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const long = await server.admin.inject({ method: 'PATCH', url: `/admin/clients/${'a'.repeat(201)}`, headers, payload: { active: false } });
    expect(long.statusCode).toBe(414);
    expect(long.json()).toEqual({ error: 'invalid_request', error_description: 'a path segment is too long' });

    const badEncoding = await server.admin.inject({ method: 'PATCH', url: '/admin/agents/%zz', headers, payload: { active: false } });
    expect(badEncoding.statusCode).toBe(400);
    expectJsonError(badEncoding);
  });

  it('POST /admin/clients: no 5xx, the error format, nothing written when refused', async () => {
    const report = await adminFuzz('/admin/clients', 'POST', { name, redirect_uris: redirectUris });
    expectReached(report, { statuses: [201, 400, 401, 404, 413, 415] });
  });

  it('PATCH /admin/clients/:id: no 5xx, the error format, nothing written when refused', async () => {
    const report = await adminFuzz('/admin/clients', 'PATCH', { name, redirect_uris: redirectUris, active }, ['client_id', 'client2_id']);
    expectReached(report, { statuses: [200, 400, 401, 404, 413, 415] });
  });

  it('POST /admin/agents: no 5xx, the error format, nothing written when refused', async () => {
    const report = await adminFuzz('/admin/agents', 'POST', { email, name: [fc.oneof(name[0], fc.constant(null)), name[1]] });
    expectReached(report, { statuses: [201, 400, 401, 404, 413, 415] });
  });

  it('PATCH /admin/agents/:id: no 5xx, the error format, nothing written when refused', async () => {
    const report = await adminFuzz('/admin/agents', 'PATCH', { name: [fc.oneof(name[0], fc.constant(null)), name[1]], active }, ['agent_id', 'agent2_id']);
    expectReached(report, { statuses: [200, 400, 401, 404, 413, 415] });
  });
});
