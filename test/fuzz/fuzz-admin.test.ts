import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeCode } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { signInToCode } from '../helpers/flow.js';
import {
  adminExample,
  adminExamples,
  type AdminInput,
  adminInputs,
  adminRequest,
  asSent,
  bodies,
  type Body,
  expectJsonError,
  expectReached,
  type FieldSpec,
  type Fixtures,
  fuzz,
  FUZZ_TIMEOUT,
  hostile,
  mostlyValid,
  nastyString,
  Ref,
  ref,
  rerouted,
  type Sent,
  strayBody,
} from '../helpers/fuzz.js';
import { ADMIN_TOKEN, CLIENT_VIEW, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Requests per endpoint (at least MIN_RUNS, times FUZZ_SCALE: see helpers/fuzz.ts), sized to the
 * fuzz set's budget of about a minute per store on a 2-core machine.
 */
const RUNS = { write: 1000, rotate: 1000, remove: 1000, get: 1000, list: 1000 };

const validRedirectUri = fc.oneof(
  fc.constantFrom(
    'https://shop.example/cb',
    'http://localhost:8080/cb',
    'http://127.0.0.1/cb',
    'http://[::1]:3000/cb',
    'https://例え.jp/cb',
    'HTTPS://SHOP.EXAMPLE/CB',
  ),
  fc.webUrl({ validSchemes: ['https'], withQueryParameters: true }),
);
const badRedirectUri = fc.oneof(
  fc.constantFrom(
    'http://evil.example/cb',
    'https://shop.example/cb#frag',
    'javascript:alert(1)',
    'https://',
    '//shop.example/cb',
    'shop.example/cb',
    'https://[::1',
    'http://localhost.evil.example/cb',
    'https://exa mple.com/',
    'data:text/html,x',
    'file:///etc/passwd',
    `https://shop.example/${'x'.repeat(2000)}`,
    'https://shop.example/\u0000',
    'http://0x7f.1/cb',
    'http://[::ffff:127.0.0.1]/cb',
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
const name: FieldSpec[string] = [
  fc.oneof(
    fc.constant('Shop'),
    fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim().length > 0),
  ),
  hostile({ json: true }),
];
const active: FieldSpec[string] = [fc.boolean(), hostile({ json: true })];
const email: FieldSpec[string] = [
  fc.oneof(fc.emailAddress(), fc.constantFrom('owner@example.com', 'OWNER@Example.COM', 'o.w+ner@sub.example.org')),
  fc.oneof(
    fc.constantFrom('owner', '@example.com', 'owner@', 'a@b', 'owner@example.com\u0000', `${'a'.repeat(320)}@example.com`, 'ü@example.com'),
    hostile({ json: true }),
  ),
];

const AGENT_VIEW = ['active', 'agent_id', 'client_id', 'created_at', 'email', 'kind', 'name', 'secret_enabled'];

const json = (value: unknown): Body => ({ kind: 'json', value, contentType: 'application/json' });

/** The examples of one route (see adminExamples): its valid call, then the ways it is refused. */
function examplesFor(method: string, options: { id?: string; body?: Body; wrongMethod?: string; bodies?: boolean }): AdminInput[] {
  const id = options.id === undefined ? undefined : new Ref(options.id);
  return adminExamples([adminExample({ method, id, body: options.body })], { ...options, id: id !== undefined });
}

// Generated calls to every route of the admin API's registrations (clients, agents); the grant
// listings, revocations and the audit log are in fuzz-admin-grants.test.ts. See helpers/fuzz.ts
// for what every run asserts.
describe(`fuzzing the admin API (${storeName})`, { timeout: FUZZ_TIMEOUT }, () => {
  let server: TestServer;
  let fixtures: Fixtures;

  /** client2 and agent2 hold a grant together, so that deleting either cascades through real rows. */
  async function signedInPair() {
    const [client, agent] = [await server.createClient(), await server.createAgent()];
    const { code, verifier } = await signInToCode(server, { client, agent });
    const res = await exchangeCode(server, client, code, verifier);
    if (res.statusCode !== 200) throw new Error(`code exchange failed: ${res.body}`);
    return { client2_id: client.client_id, agent2_id: agent.agent_id };
  }

  beforeAll(async () => {
    server = await startTestServer();
    fixtures = {
      admin_token: `Bearer ${ADMIN_TOKEN}`,
      client_id: (await server.createClient()).client_id,
      agent_id: (await server.createAgent()).agent_id,
      ...(await signedInPair()),
    };
  });
  afterAll(() => server.close());

  /** After a DELETE went through: registers again what it removed. */
  async function restore() {
    const { clients, agents } = server.services.store;
    if (!(await clients.get(fixtures.client_id as string))) fixtures.client_id = (await server.createClient()).client_id;
    if (!(await agents.get(fixtures.agent_id as string))) fixtures.agent_id = (await server.createAgent()).agent_id;
    const pairGone = !(await clients.get(fixtures.client2_id as string)) || !(await agents.get(fixtures.agent2_id as string));
    if (pairGone) Object.assign(fixtures, await signedInPair());
  }

  const id = (names: string[]) => fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...names).chain(ref) }, hostile({ like: names[0] }));
  const method = (usual: string, wrong: string[]) => fc.oneof({ weight: 14, arbitrary: fc.constant(usual) }, fc.constantFrom(...wrong));
  const noHash = (res: Sent<AdminInput>['res']) => expect(Object.keys(res.json()).some((k) => k.includes('hash'))).toBe(false);

  // Wrong methods are ones that write nothing on these paths (DELETE would remove the fixtures).
  function writeFuzz(route: string, usual: 'POST' | 'PATCH', fields: FieldSpec, ids: string[] = [], validBody: Record<string, unknown> = {}) {
    return fuzz({
      app: server.admin,
      db: server.services.db,
      numRuns: RUNS.write,
      fixtures: () => fixtures,
      arbitrary: adminInputs({
        token: ADMIN_TOKEN,
        method: method(usual, ['PUT', 'OPTIONS']),
        id: ids.length ? id(ids) : undefined,
        body: bodies(mostlyValid(fields), 'json'),
      }),
      examples: examplesFor(usual, { id: ids[0], body: json(validBody), wrongMethod: 'PUT', bodies: true }),
      request: (input) => adminRequest(route, input),
      check: ({ res }) => {
        if (res.statusCode >= 400) return expectJsonError(res);
        expect([200, 201]).toContain(res.statusCode);
        noHash(res);
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

  // Reads, rotations and deletions first, while the store holds only the fixtures (the writes below add hundreds of rows).
  for (const [plural, view, secretField] of [
    ['clients', CLIENT_VIEW, 'client_secret'],
    ['agents', AGENT_VIEW, 'agent_secret'],
  ] as const) {
    const singular = plural.slice(0, -1);
    const ids = [`${singular}_id`, `${singular}2_id`];

    it(`GET /admin/${plural}: no 5xx, the error format, never a write`, async () => {
      const report = await fuzz({
        app: server.admin,
        db: server.services.db,
        numRuns: RUNS.list,
        readOnly: true,
        fixtures: () => fixtures,
        arbitrary: adminInputs({ token: ADMIN_TOKEN, method: method('GET', ['PUT', 'PATCH', 'DELETE', 'OPTIONS']), body: strayBody }),
        examples: examplesFor('GET', { wrongMethod: 'DELETE' }),
        request: (input) => adminRequest(`/admin/${plural}`, input),
        check: ({ res }) => {
          if (res.statusCode >= 400) return expectJsonError(res);
          expect(res.statusCode).toBe(200);
          const list = res.json()[plural] as Record<string, unknown>[];
          expect(list.length).toBeGreaterThanOrEqual(2);
          for (const item of list) expect(Object.keys(item).sort()).toEqual(view);
        },
      });
      expectReached(report, { statuses: [200, 401, 404], codes: ['unauthorized', 'not_found'] });
    });

    it(`GET /admin/${plural}/:id: no 5xx, the error format, never a write`, async () => {
      const report = await fuzz({
        app: server.admin,
        db: server.services.db,
        numRuns: RUNS.get,
        readOnly: true,
        fixtures: () => fixtures,
        arbitrary: adminInputs({ token: ADMIN_TOKEN, method: method('GET', ['PUT', 'POST', 'OPTIONS']), id: id(ids), body: strayBody }),
        examples: examplesFor('GET', { id: ids[1], wrongMethod: 'POST' }),
        request: (input) => adminRequest(`/admin/${plural}/:id`, input),
        check: ({ res, input }) => {
          if (res.statusCode >= 400) return expectJsonError(res);
          // A ".." segment is resolved before routing: another route answered.
          if (rerouted(input)) return;
          expect(res.statusCode).toBe(200);
          expect(Object.keys(res.json()).sort()).toEqual(view);
          expect(res.json()[`${singular}_id`]).toBe(asSent(String(input.id)));
        },
      });
      expectReached(report, { statuses: [200, 400, 401, 404, 414], codes: ['invalid_request', 'unauthorized', 'not_found'] });
    });

    it(`POST /admin/${plural}/:id/secret: no 5xx, the error format, nothing written when refused`, async () => {
      const report = await fuzz({
        app: server.admin,
        db: server.services.db,
        numRuns: RUNS.rotate,
        fixtures: () => fixtures,
        arbitrary: adminInputs({ token: ADMIN_TOKEN, method: method('POST', ['GET', 'PUT', 'PATCH', 'OPTIONS']), id: id(ids), body: strayBody }),
        examples: examplesFor('POST', { id: ids[1], wrongMethod: 'GET', bodies: true }),
        request: (input) => adminRequest(`/admin/${plural}/:id/secret`, input),
        check: ({ res, input }) => {
          if (res.statusCode >= 400) return expectJsonError(res);
          // A ".." segment is resolved before routing: another route answered.
          if (rerouted(input)) return;
          expect(res.statusCode).toBe(200);
          const body = res.json();
          expect(Object.keys(body).sort()).toEqual([...view, secretField].sort());
          expect(body[`${singular}_id`]).toBe(asSent(String(input.id)));
          // At least 256 bits behind a readable prefix (base64url: 43 characters).
          expect(body[secretField]).toMatch(/^aa_[a-z]+_[A-Za-z0-9_-]{43,}$/);
        },
      });
      expectReached(report, { statuses: [200, 400, 401, 404, 413, 414, 415], codes: ['invalid_request', 'unauthorized', 'not_found'] });
    });

    it(`DELETE /admin/${plural}/:id: no 5xx, the error format, nothing removed when refused`, async () => {
      const report = await fuzz({
        app: server.admin,
        db: server.services.db,
        numRuns: RUNS.remove,
        fixtures: () => fixtures,
        refresh: restore,
        arbitrary: adminInputs({ token: ADMIN_TOKEN, method: method('DELETE', ['GET', 'PUT', 'OPTIONS']), id: id(ids), body: strayBody }),
        examples: examplesFor('DELETE', { id: ids[1], wrongMethod: 'PUT', bodies: true }),
        request: (input) => adminRequest(`/admin/${plural}/:id`, input),
        check: ({ res, input }) => {
          if (res.statusCode >= 400) return expectJsonError(res);
          // A ".." segment is resolved before routing: another route answered.
          if (rerouted(input)) return;
          if (input.method === 'GET') return expect(res.statusCode).toBe(200);
          expect(res.statusCode).toBe(204);
          expect(res.body).toBe('');
        },
      });
      expectReached(report, { statuses: [204, 400, 401, 404, 413, 414, 415], codes: ['invalid_request', 'unauthorized', 'not_found'] });
    });
  }

  it('POST /admin/clients: no 5xx, the error format, nothing written when refused', async () => {
    const report = await writeFuzz('/admin/clients', 'POST', { name, redirect_uris: redirectUris }, [], {
      name: 'Shop',
      redirect_uris: ['https://shop.example/cb'],
    });
    expectReached(report, { statuses: [201, 400, 401, 404, 413, 415] });
  });

  it('PATCH /admin/clients/:id: no 5xx, the error format, nothing written when refused', async () => {
    const report = await writeFuzz('/admin/clients/:id', 'PATCH', { name, redirect_uris: redirectUris, active }, ['client_id', 'client2_id'], {
      name: 'Shop',
    });
    expectReached(report, { statuses: [200, 400, 401, 404, 413, 414, 415] });
  });

  it('POST /admin/agents: no 5xx, the error format, nothing written when refused', async () => {
    const report = await writeFuzz('/admin/agents', 'POST', { email, name: [fc.oneof(name[0], fc.constant(null)), name[1]] }, [], {
      email: 'owner@example.com',
    });
    expectReached(report, { statuses: [201, 400, 401, 404, 413, 415] });
  });

  it('PATCH /admin/agents/:id: no 5xx, the error format, nothing written when refused', async () => {
    const report = await writeFuzz(
      '/admin/agents/:id',
      'PATCH',
      { name: [fc.oneof(name[0], fc.constant(null)), name[1]], active },
      ['agent_id', 'agent2_id'],
      { active: true },
    );
    expectReached(report, { statuses: [200, 400, 401, 404, 413, 414, 415] });
  });
});
