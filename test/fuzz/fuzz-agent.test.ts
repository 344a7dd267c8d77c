import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, checkStatus, completeInBrowser, setRequestExpiry, startAuthorize } from '../helpers/flow.js';
import {
  bodies,
  type Body,
  encodeBody,
  expectJsonError,
  expectReached,
  type Fixtures,
  fuzz,
  FUZZ_TIMEOUT,
  hostile,
  mostlyValid,
  otherMethods,
  rawQueryFragments,
  ref,
  snapshot,
  urlencoded,
} from '../helpers/fuzz.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Generated requests against the agent back channel; see helpers/fuzz.ts for what every run asserts.
describe(`fuzzing the agent endpoints (${storeName})`, { timeout: FUZZ_TIMEOUT }, () => {
  let server: TestServer;
  let fixtures: Fixtures;
  let client: Awaited<ReturnType<TestServer['createClient']>>;

  async function newRequest() {
    return (await startAuthorize(server, client)).requestId;
  }

  beforeAll(async () => {
    server = await startTestServer();
    client = await server.createClient();
    const [agent, agent2, inactive] = [await server.createAgent(), await server.createAgent(), await server.createAgent()];
    await server.adminCall('PATCH', `/admin/agents/${inactive.agent_id}`, { active: false });

    const authenticated = await newRequest();
    await agentAuthenticate(server, { request_id: authenticated, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    const expired = await newRequest();
    await setRequestExpiry(server, expired, -60);
    // The first read of an overdue request records its expiry (a write by design): get it done here.
    await checkStatus(server, expired);
    const denied = await newRequest();
    await server.services.db.query(`UPDATE auth_requests SET status = 'error', error = 'access_denied' WHERE id = $1`, [denied]);
    const started = await startAuthorize(server, client);
    await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    await completeInBrowser(server, started.requestId, started.cookie);

    fixtures = {
      pending_id: await newRequest(),
      authenticated_id: authenticated,
      expired_id: expired,
      denied_id: denied,
      completed_id: started.requestId,
      agent_id: agent.agent_id,
      agent_secret: agent.agent_secret,
      agent2_id: agent2.agent_id,
      agent2_secret: agent2.agent_secret,
      inactive_agent_id: inactive.agent_id,
      inactive_agent_secret: inactive.agent_secret,
    };
  });
  afterAll(() => server.close());

  /** A successful authenticate spends the pending request: start another. */
  async function refresh() {
    const current = await server.services.store.signIns.observe(fixtures.pending_id as string);
    if (current?.status !== 'pending') fixtures.pending_id = await newRequest();
  }

  const requestId = fc.oneof(
    { weight: 2, arbitrary: ref('pending_id') },
    ...['authenticated_id', 'expired_id', 'denied_id', 'completed_id'].map((name) => ({ weight: 1, arbitrary: ref(name) })),
  );

  // Mostly one agent's own id and secret; sometimes another agent's, or an inactive one's.
  const agents = ['agent', 'agent', 'agent', 'agent2', 'inactive_agent'];
  const authenticateFields = fc.tuple(fc.constantFrom(...agents), fc.constantFrom(...agents)).chain(([who, secretOf]) =>
    mostlyValid({
      request_id: [requestId, hostile({ like: 'pending_id', json: true })],
      agent_id: [ref(`${who}_id`), hostile({ like: `${who}_id`, json: true })],
      agent_secret: [
        fc.oneof({ weight: 4, arbitrary: ref(`${who}_secret`) }, ref(`${secretOf}_secret`)),
        hostile({ like: `${who}_secret`, json: true }),
      ],
      model: [fc.oneof(fc.constant('test-model-1'), fc.string({ minLength: 1, maxLength: 200 })), hostile({ json: true })],
    }),
  );

  // Regression (found by this file): PostgreSQL refuses NUL in text, which used to surface as a 500.
  it('a NUL in a value that reaches the store is a 400 invalid_request that changes nothing', async () => {
    // A request id has a fixed alphabet now, so the NUL is refused before the store sees it.
    const res = await server.app.inject({ url: '/api/check-status?request_id=%00' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_request', error_description: expect.stringContaining('request_id') });

    const before = await snapshot(server.services.db);
    const auth = await agentAuthenticate(server, {
      request_id: fixtures.pending_id as string,
      agent_id: fixtures.agent_id as string,
      agent_secret: fixtures.agent_secret as string,
      model: 'model\u0000',
    });
    expect(auth.statusCode).toBe(400);
    expect(auth.json().error).toBe('invalid_request');
    expect(await snapshot(server.services.db)).toEqual(before);
  });

  it('POST /api/agent/authenticate: no 5xx, {error, error_description} on failure, nothing written when refused', async () => {
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 500,
      fixtures: () => fixtures,
      refresh,
      arbitrary: fc.record({
        method: fc.oneof({ weight: 19, arbitrary: fc.constant('POST') }, fc.constantFrom(...otherMethods('POST'))),
        body: bodies(authenticateFields, 'json'),
      }),
      request: ({ method, body }: { method: string; body: Body }) => ({
        method: method as 'POST',
        url: '/api/agent/authenticate',
        ...(method === 'GET' || method === 'OPTIONS' ? {} : encodeBody(body)),
      }),
      check: ({ res }) => {
        if (res.statusCode === 200) expect(res.json()).toMatchObject({ status: 'authenticated', request_id: expect.any(String) });
        else expectJsonError(res);
      },
    });
    // Past the schema: every outcome of the handler was reached.
    expectReached(report, {
      statuses: [200, 413, 415],
      codes: ['invalid_request', 'invalid_credentials', 'not_found', 'request_expired', 'request_already_authenticated', 'access_denied'],
    });
  });

  it('GET /api/check-status: no 5xx, the error format, never a write', async () => {
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 250,
      fixtures: () => fixtures,
      refresh,
      readOnly: true,
      arbitrary: fc.record({
        method: fc.oneof({ weight: 19, arbitrary: fc.constant('GET') }, fc.constantFrom(...otherMethods('GET'))),
        query: mostlyValid({ request_id: [requestId, hostile({ like: 'pending_id' })] }),
        raw: rawQueryFragments,
      }),
      request: ({ method, query, raw }: { method: string; query: Record<string, unknown>; raw: string[] }) => ({
        method: method as 'GET',
        url: `/api/check-status?${urlencoded(query, raw)}`,
      }),
      check: ({ res }) => {
        if (res.statusCode !== 200) return expectJsonError(res);
        expect(['pending', 'authenticated', 'completed', 'error']).toContain(res.json().status);
        expect(res.body).not.toMatch(/"code"/);
      },
    });
    expectReached(report, { statuses: [200], codes: ['not_found', 'invalid_request'] });
  });
});
