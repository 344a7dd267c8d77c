import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_EVENTS } from '../../src/store/audit-log.js';
import { exchangeCode, refresh as refreshToken } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, setRequestExpiry, signInToCode, startAuthorize } from '../helpers/flow.js';
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
  type Fixtures,
  fuzz,
  FUZZ_TIMEOUT,
  hostile,
  mostlyValid,
  Ref,
  ref,
  rerouted,
  type Response,
  strayBody,
} from '../helpers/fuzz.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * Requests per endpoint (at least MIN_RUNS, times FUZZ_SCALE: see helpers/fuzz.ts); the audit log,
 * with nine filters, gets the most. `paging` walks are several requests each.
 */
const RUNS = { listing: 1000, revoke: 1000, audit: 2000, paging: 60 };

const GRANT_VIEW = [
  'active',
  'agent_id',
  'client_id',
  'client_name',
  'created_at',
  'email',
  'expires_at',
  'grant_id',
  'last_refreshed_at',
  'model',
  'revoked_at',
  'revoked_reason',
  'scope',
];
const AGENT_VIEW = ['active', 'agent_id', 'client_id', 'created_at', 'email', 'kind', 'name', 'secret_enabled'];
const CLIENT_AGENT_VIEW = ['agent_id', 'email', 'grants', 'last_active_at', 'models', 'name'];
const EVENT_VIEW = ['actor', 'agent_id', 'at', 'client_id', 'detail', 'email', 'event', 'grant_id', 'id', 'model', 'reason', 'request_id', 'user_id'];

const method = (usual: string, wrong: string[]) => fc.oneof({ weight: 14, arbitrary: fc.constant(usual) }, fc.constantFrom(...wrong));
/** Absent (no filter) half the time, else one of the valid values. */
const optional = (...values: fc.Arbitrary<unknown>[]) => fc.oneof({ weight: values.length, arbitrary: fc.constant(undefined) }, ...values);

// Generated calls to the grant listings, the revocations at every level and the audit log, over a
// store with real sign-ins in it; see helpers/fuzz.ts for what every run asserts.
describe(`fuzzing the admin API's grants and audit log (${storeName})`, { timeout: FUZZ_TIMEOUT }, () => {
  let server: TestServer;
  let fixtures: Fixtures;
  /** The grants live after setup: what a revocation took away is given back before the next run. */
  let liveGrants: string[];

  beforeAll(async () => {
    server = await startTestServer();
    const [shop, news, quiet] = [await server.createClient(), await server.createClient(), await server.createClient()];
    const owner = 'owner-fuzz@example.com';
    const [agentA, agentB, other, idle] = [
      await server.createAgent(owner),
      await server.createAgent(owner),
      await server.createAgent('other-fuzz@example.com'),
      await server.createAgent('idle-fuzz@example.com'),
    ];
    const signIn = async (client: typeof shop, agent: typeof agentA, model = 'test-model-1') => {
      const { code, verifier, requestId } = await signInToCode(server, { client, agent, model });
      const res = await exchangeCode(server, client, code, verifier);
      if (res.statusCode !== 200) throw new Error(`code exchange failed: ${res.body}`);
      return { requestId, tokens: res.json() as { refresh_token: string } };
    };
    const first = await signIn(shop, agentA, 'model-a');
    await signIn(news, agentA, 'model-b');
    await signIn(shop, agentB);
    await signIn(news, other);
    await refreshToken(server, shop, first.tokens.refresh_token);
    // A grant revoked already, and a failed authentication: more kinds of events in the log.
    await signIn(news, agentB);
    const failed = await startAuthorize(server, quiet);
    await agentAuthenticate(server, { request_id: failed.requestId, agent_id: idle.agent_id, agent_secret: 'wrong' });
    // Over: a revocation ends the sign-ins in flight too, and one that finds nothing must change nothing.
    await setRequestExpiry(server, failed.requestId, -60);

    const { rows: grants } = await server.services.db.query<{ id: string; agent_id: string; client_id: string }>(
      'SELECT id, agent_id, client_id FROM grants ORDER BY created_at, id',
    );
    const revoked = grants[grants.length - 1].id;
    expect((await server.adminCall('POST', `/admin/grants/${revoked}/revoke`)).json).toEqual({ revoked: 1 });
    liveGrants = grants.slice(0, -1).map((g) => g.id);
    const { rows: events } = await server.services.db.query<{ id: string }>('SELECT id::text AS id FROM audit_events ORDER BY id');

    fixtures = {
      admin_token: `Bearer ${ADMIN_TOKEN}`,
      grant_id: liveGrants[0],
      grant2_id: liveGrants[2],
      revoked_grant_id: revoked,
      agent_id: agentA.agent_id,
      agent2_id: other.agent_id,
      idle_agent_id: idle.agent_id,
      client_id: shop.client_id,
      client2_id: news.client_id,
      quiet_client_id: quiet.client_id,
      email: owner,
      email2: 'other-fuzz@example.com',
      idle_email: 'idle-fuzz@example.com',
      request_id: first.requestId,
      failed_request_id: failed.requestId,
      cursor: events[Math.floor(events.length / 2)].id,
    };
  });
  afterAll(() => server.close());

  /** Un-revokes what the last run revoked, so that every run finds live grants to revoke. */
  async function restoreGrants() {
    await server.services.db.query('UPDATE grants SET revoked_at = NULL, revoked_reason = NULL WHERE id = ANY($1) AND revoked_at IS NOT NULL', [
      liveGrants,
    ]);
  }

  const id = (names: string[]) => fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...names).chain(ref) }, hostile({ like: names[0] }));
  const email = fc.oneof(
    ref('email'),
    ref('email2'),
    ref('idle_email'),
    fc.constant(new Ref('email', { label: 'upper', apply: (v) => v.toUpperCase() })),
    fc.constantFrom('nobody@example.com', 'a@b.co'),
  );
  const badEmail = fc.oneof(
    hostile({ like: 'email', json: true }),
    fc.constantFrom('owner', '@example.com', 'owner-fuzz@', 'owner-fuzz@example.com\u0000', `${'a'.repeat(320)}@example.com`, 'ü@example.com', '%'),
  );
  const keysOf = (value: unknown) => Object.keys(value as object).sort();
  const expectGrants = (grants: Record<string, unknown>[], field?: [string, string]) => {
    for (const grant of grants) {
      expect(keysOf(grant)).toEqual(GRANT_VIEW);
      if (field) expect(grant[field[0]]).toBe(field[1]);
    }
  };

  describe('listings (never a write)', () => {
    function listingFuzz(
      route: string,
      options: {
        id?: string[];
        query?: fc.Arbitrary<Record<string, unknown>>;
        examples: AdminInput[];
        check(res: Response, input: AdminInput): void;
      },
    ) {
      return fuzz({
        app: server.admin,
        db: server.services.db,
        numRuns: RUNS.listing,
        readOnly: true,
        fixtures: () => fixtures,
        arbitrary: adminInputs({
          token: ADMIN_TOKEN,
          method: method('GET', ['PUT', 'PATCH', 'DELETE', 'OPTIONS']),
          id: options.id && id(options.id),
          query: options.query,
          body: strayBody,
        }),
        examples: options.examples,
        request: (input) => adminRequest(route, input),
        check: ({ res, input }) => {
          if (res.statusCode >= 400) return expectJsonError(res);
          expect(res.statusCode).toBe(200);
          // A ".." segment is resolved before routing (/admin/clients/../agents is the agent list).
          if (!rerouted(input)) options.check(res, input);
        },
      });
    }

    it("GET /admin/agents/:id/grants: no 5xx, the error format, only that agent's grants", async () => {
      const ids = ['agent_id', 'agent2_id', 'idle_agent_id'];
      const report = await listingFuzz('/admin/agents/:id/grants', {
        id: ids,
        examples: adminExamples(
          ids.map((name) => adminExample({ method: 'GET', id: new Ref(name) })),
          { id: true, wrongMethod: 'PUT' },
        ),
        check: (res, input) => {
          const body = res.json();
          expect(keysOf(body)).toEqual(['agent_id', 'grants']);
          expect(body.agent_id).toBe(asSent(String(input.id)));
          expectGrants(body.grants, ['agent_id', body.agent_id]);
        },
      });
      expectReached(report, { statuses: [200, 400, 401, 404, 414], codes: ['invalid_request', 'unauthorized', 'not_found'] });
    });

    it("GET /admin/users?email=: no 5xx, the error format, only that user's agents and grants", async () => {
      const report = await listingFuzz('/admin/users', {
        query: mostlyValid({ email: [email, badEmail] }),
        examples: adminExamples(
          [
            adminExample({ method: 'GET', query: { email: new Ref('email') } }),
            adminExample({ method: 'GET', query: { email: new Ref('idle_email') } }),
            adminExample({ method: 'GET', query: { email: 'nobody@example.com' } }),
            adminExample({ method: 'GET', query: { email: 'not-an-email' } }),
            adminExample({ method: 'GET', query: { email: 'owner-fuzz@example.com' }, raw: ['email=x@example.com'] }),
          ],
          { wrongMethod: 'PUT' },
        ),
        check: (res, input) => {
          const body = res.json();
          expect(keysOf(body)).toEqual(['agents', 'email', 'grants']);
          expect(body.email.toLowerCase()).toBe(asSent(String(input.query.email)).toLowerCase());
          for (const agent of body.agents) expect(keysOf(agent)).toEqual(AGENT_VIEW);
          for (const agent of body.agents) expect(agent.email).toBe(body.email);
          const agentIds = new Set(body.agents.map((a: { agent_id: string }) => a.agent_id));
          expectGrants(body.grants);
          for (const grant of body.grants) expect(agentIds.has(grant.agent_id)).toBe(true);
        },
      });
      expectReached(report, { statuses: [200, 400, 401, 404], codes: ['invalid_request', 'unauthorized', 'not_found'] });
    });

    it('GET /admin/clients/:id/agents: no 5xx, the error format, only agents signed in there', async () => {
      const ids = ['client_id', 'client2_id', 'quiet_client_id'];
      const report = await listingFuzz('/admin/clients/:id/agents', {
        id: ids,
        examples: adminExamples(
          ids.map((name) => adminExample({ method: 'GET', id: new Ref(name) })),
          { id: true, wrongMethod: 'PUT' },
        ),
        check: (res, input) => {
          const body = res.json();
          expect(keysOf(body)).toEqual(['agents', 'client_id']);
          expect(body.client_id).toBe(asSent(String(input.id)));
          for (const agent of body.agents) {
            expect(keysOf(agent)).toEqual(CLIENT_AGENT_VIEW);
            expect(agent.grants).toBeGreaterThan(0);
          }
        },
      });
      expectReached(report, { statuses: [200, 400, 401, 404, 414], codes: ['invalid_request', 'unauthorized', 'not_found'] });
    });
  });

  describe('revocations (nothing written when refused or when nothing was left to revoke)', () => {
    let revokedSome = 0;
    let revokedNone = 0;

    function revokeFuzz(route: string, options: { id?: string[]; body?: fc.Arbitrary<Body | undefined>; examples: AdminInput[] }) {
      revokedSome = 0;
      revokedNone = 0;
      return fuzz({
        app: server.admin,
        db: server.services.db,
        numRuns: RUNS.revoke,
        fixtures: () => fixtures,
        refresh: restoreGrants,
        // Wrong methods that match no route on these paths (DELETE on an id path would remove the fixture).
        arbitrary: adminInputs({
          token: ADMIN_TOKEN,
          method: method('POST', ['GET', 'PUT', 'PATCH', 'OPTIONS']),
          id: options.id && id(options.id),
          body: options.body ?? strayBody,
        }),
        examples: options.examples,
        request: (input) => adminRequest(route, input),
        unchanged: ({ res }) => res.statusCode === 200 && res.json().revoked === 0,
        check: ({ res }) => {
          if (res.statusCode >= 400) return expectJsonError(res);
          expect(res.statusCode).toBe(200);
          expect(keysOf(res.json())).toEqual(['revoked']);
          const { revoked } = res.json();
          expect(Number.isInteger(revoked) && revoked >= 0).toBe(true);
          if (revoked > 0) revokedSome++;
          else revokedNone++;
        },
      });
    }

    /** Both outcomes of a revocation came up: some grants ended, and none left to end. */
    function expectBothOutcomes() {
      expect(revokedSome, 'no run revoked a grant').toBeGreaterThan(0);
      expect(revokedNone, 'no run found nothing to revoke').toBeGreaterThan(0);
    }

    const byId = (route: string, ids: string[]) => async () => {
      const report = await revokeFuzz(route, {
        id: ids,
        examples: adminExamples(
          ids.map((name) => adminExample({ method: 'POST', id: new Ref(name) })),
          { id: true, bodies: true, wrongMethod: 'PUT' },
        ),
      });
      expectReached(report, { statuses: [200, 400, 401, 404, 413, 414, 415], codes: ['invalid_request', 'unauthorized', 'not_found'] });
      expectBothOutcomes();
    };

    it('POST /admin/grants/:id/revoke: no 5xx, the error format', byId('/admin/grants/:id/revoke', ['grant_id', 'grant2_id', 'revoked_grant_id']));
    it(
      'POST /admin/agents/:id/revoke-grants: no 5xx, the error format',
      byId('/admin/agents/:id/revoke-grants', ['agent_id', 'agent2_id', 'idle_agent_id']),
    );
    it(
      'POST /admin/clients/:id/revoke-grants: no 5xx, the error format',
      byId('/admin/clients/:id/revoke-grants', ['client_id', 'client2_id', 'quiet_client_id']),
    );

    it('POST /admin/users/revoke-grants {email}: no 5xx, the error format', async () => {
      const json = (value: unknown): Body => ({ kind: 'json', value, contentType: 'application/json' });
      const report = await revokeFuzz('/admin/users/revoke-grants', {
        body: bodies(mostlyValid({ email: [email, badEmail] }), 'json'),
        examples: adminExamples(
          [
            adminExample({ method: 'POST', body: json({ email: new Ref('email') }) }),
            adminExample({ method: 'POST', body: json({ email: new Ref('idle_email') }) }),
            adminExample({ method: 'POST', body: json({ email: 'nobody@example.com' }) }),
            adminExample({ method: 'POST', body: json({ email: 'owner-fuzz@example.com', extra: 1 }) }),
            adminExample({ method: 'POST', body: json({ email: ['owner-fuzz@example.com'] }) }),
          ],
          { bodies: true, wrongMethod: 'PUT' },
        ),
      });
      expectReached(report, { statuses: [200, 400, 401, 404, 413, 415], codes: ['invalid_request', 'unauthorized', 'not_found'] });
      expectBothOutcomes();
    });
  });

  describe('GET /admin/audit', () => {
    // Instants as the schema takes them (with an offset, or a day) around the events, and far from them.
    const near = (base: () => number) => fc.integer({ min: -7200, max: 7200 }).map((s) => new Date(base() + s * 1000));
    const instant = fc.oneof(
      near(() => Date.now()).map((d) => d.toISOString()),
      near(() => Date.now()).map((d) => d.toISOString().slice(0, 10)),
      fc
        .tuple(
          near(() => Date.now()),
          fc.constantFrom('+00:00', '+05:30', '-08:00', '+14:00', '-12:00'),
        )
        .map(([d, offset]) => d.toISOString().replace('Z', offset)),
      fc.date({ min: new Date('1000-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }).map((d) => d.toISOString()),
      fc.constantFrom(
        '0000-01-01',
        '0000-01-01T00:00:00Z',
        '0001-01-01',
        '1969-12-31T23:59:59.999Z',
        '2000-02-29',
        '9999-12-31',
        '9999-12-31T23:59:59.999-12:00',
        '1970-01-01T00:00:00+14:00',
      ),
    );
    const badInstant = fc.oneof(
      fc.constantFrom(
        '2025-02-30',
        '2025-13-01',
        '2023-02-29',
        '2025-01-01T25:00:00Z',
        '2025-01-01T00:00:00',
        '2025-01-01 00:00:00Z',
        'yesterday',
        '1700000000',
        '-001000-01-01',
        '+275760-09-13T00:00:00Z',
        '2025-1-1',
      ),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      hostile(),
    );
    const limit = fc.oneof(
      fc.integer({ min: 1, max: 5 }).map(String),
      fc.integer({ min: 1, max: 200 }).map(String),
      fc.constantFrom('1e1', ' 5', '0x10', '+7', '5.0', '200'),
    );
    const badLimit = fc.oneof(fc.constantFrom('0', '201', '-1', '1.5', 'abc', '', 'Infinity', 'NaN', '1e3', '9007199254740993'), hostile());
    const cursor = fc.oneof(ref('cursor'), fc.integer({ min: 1, max: 2000 }).map(String), fc.constantFrom('9999999999999999', '1'));
    const badCursor = fc.oneof(fc.constantFrom('0', '01', '-1', '1.5', '1e3', '99999999999999999', 'abc', ' 1', '0x10'), hostile({ like: 'cursor' }));
    const filters = mostlyValid({
      agent_id: [optional(ref('agent_id'), ref('agent2_id'), ref('idle_agent_id')), hostile({ like: 'agent_id' })],
      email: [optional(email), badEmail],
      client_id: [optional(ref('client_id'), ref('client2_id')), hostile({ like: 'client_id' })],
      request_id: [optional(ref('request_id'), ref('failed_request_id')), hostile({ like: 'request_id' })],
      event: [
        optional(fc.constantFrom(...AUDIT_EVENTS)),
        fc.oneof(fc.constantFrom('REVOKED', 'revoked ', 'token', 'agent_authenticated,revoked'), hostile()),
      ],
      from: [optional(instant), badInstant],
      to: [optional(instant), badInstant],
      limit: [optional(limit), badLimit],
      cursor: [optional(cursor), badCursor],
    });

    type Event = Record<string, unknown> & { id: number; at: string };
    let pages = { full: 0, more: 0, filtered: 0 };

    /** Every event of a page meets the filters the server read, newest first, no more than the limit. */
    function checkPage(res: Response, query: Record<string, unknown>) {
      const body = res.json() as { events: Event[]; next_cursor: string | null };
      expect(keysOf(body)).toEqual(['events', 'next_cursor']);
      const q: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(query)) if (typeof v === 'string') q[k] = asSent(v);
      const max = q.limit === undefined ? 50 : Number(q.limit);
      const { events } = body;
      expect(events.length).toBeLessThanOrEqual(max);
      for (const [i, event] of events.entries()) {
        expect(keysOf(event)).toEqual(EVENT_VIEW);
        if (i > 0) expect(event.id).toBeLessThan(events[i - 1].id);
        for (const field of ['agent_id', 'client_id', 'request_id', 'event'] as const) {
          if (q[field] !== undefined) expect(event[field]).toBe(q[field]);
        }
        if (q.email !== undefined) expect(String(event.email).toLowerCase()).toBe(q.email.toLowerCase());
        const at = new Date(event.at).getTime();
        if (q.from !== undefined) expect(at).toBeGreaterThanOrEqual(new Date(q.from).getTime());
        // The page shows `at` to the millisecond; the store compares it to the microsecond.
        if (q.to !== undefined) expect(at).toBeLessThanOrEqual(new Date(q.to).getTime());
        if (q.cursor !== undefined) expect(event.id).toBeLessThan(Number(q.cursor));
      }
      if (body.next_cursor !== null) {
        expect(events).toHaveLength(max);
        expect(body.next_cursor).toBe(String(events[events.length - 1].id));
        pages.more++;
      }
      if (events.length > 0) {
        pages.full++;
        if (['agent_id', 'email', 'client_id', 'request_id', 'event', 'from', 'to', 'cursor'].some((k) => q[k] !== undefined)) pages.filtered++;
      }
    }

    const query = (q: Record<string, unknown>) => adminExample({ method: 'GET', query: q });

    // Found by this file: the schema takes any four-digit year, with any offset, but PostgreSQL has no
    // year 0 and PGlite binds a Date by its toISOString ("0000-…", "+010000-…"): a 500 on the embedded
    // store (src/admin/audit-log.ts, `instant`; src/db/pglite.ts passes the Date on as is).
    it('an instant outside the years 1 to 9999 is refused or answered, never a 500', async () => {
      for (const value of ['0000-01-01', '0000-12-31T23:59:59Z', '0000-01-01T00:00:00+14:00', '9999-12-31T23:59:59-12:00']) {
        for (const field of ['from', 'to']) {
          const res = await server.admin.inject(adminRequest('/admin/audit', { ...query({ [field]: value }), authorization: fixtures.admin_token }));
          expect(res.statusCode, `${field}=${value}: ${res.body}`).toBeLessThan(500);
          if (res.statusCode >= 400) expectJsonError(res);
        }
      }
    });

    it('filters and pages: no 5xx, the error format, never a write, every event meets the filters', async () => {
      pages = { full: 0, more: 0, filtered: 0 };
      const hourAgo = () => new Date(Date.now() - 3600_000).toISOString();
      const report = await fuzz({
        app: server.admin,
        db: server.services.db,
        numRuns: RUNS.audit,
        readOnly: true,
        fixtures: () => fixtures,
        arbitrary: adminInputs({ token: ADMIN_TOKEN, method: method('GET', ['PUT', 'PATCH', 'DELETE', 'OPTIONS']), query: filters, body: strayBody }),
        examples: adminExamples(
          [
            query({}),
            query({ limit: '1' }),
            query({ limit: '2', cursor: new Ref('cursor') }),
            query({ agent_id: new Ref('agent_id'), event: 'token_issued' }),
            query({ email: new Ref('email'), from: hourAgo(), to: '9999-12-31' }),
            query({ client_id: new Ref('quiet_client_id'), event: 'agent_authentication_failed' }),
            query({ request_id: new Ref('request_id'), limit: '3' }),
            query({ from: '0000-01-01', to: '0001-01-01T00:00:00Z' }),
            query({ limit: '0' }),
            query({ cursor: '01' }),
            query({ from: '2025-02-30' }),
            query({ event: 'nope' }),
            query({ email: 'not-an-email' }),
            query({ agent_id: 'nul\u0000' }),
          ],
          { wrongMethod: 'PUT' },
        ),
        request: (input) => adminRequest('/admin/audit', input),
        check: ({ res, input }) => {
          if (res.statusCode >= 400) return expectJsonError(res);
          expect(res.statusCode).toBe(200);
          checkPage(res, input.query);
        },
      });
      expectReached(report, { statuses: [200, 400, 401, 404], codes: ['invalid_request', 'unauthorized', 'not_found'] });
      expect(pages.full, 'no page had events').toBeGreaterThan(0);
      expect(pages.more, 'no page had a next one').toBeGreaterThan(0);
      expect(pages.filtered, 'no filtered page had events').toBeGreaterThan(0);
    });

    it('walking the pages with next_cursor gives every matching event once, as one big page does', async () => {
      const valid = fc.record({
        agent_id: optional(ref('agent_id'), ref('agent2_id')),
        client_id: optional(ref('client_id'), ref('client2_id'), ref('quiet_client_id')),
        event: optional(fc.constantFrom(...AUDIT_EVENTS)),
        limit: fc.integer({ min: 1, max: 4 }),
      });
      const list = async (q: Record<string, unknown>) => {
        const res = await server.admin.inject(
          adminRequest('/admin/audit', { ...adminExample({ method: 'GET', query: q }), authorization: fixtures.admin_token }),
        );
        expect(res.statusCode, res.body).toBe(200);
        return res.json() as { events: Event[]; next_cursor: string | null };
      };
      await fc.assert(
        fc.asyncProperty(valid, async (generated) => {
          const { limit, ...filter } = Object.fromEntries(
            Object.entries(generated).map(([k, v]) => [k, v instanceof Ref ? fixtures[v.name] : v]),
          ) as Record<string, unknown>;
          // Up to six pages' worth: the revocations above have filled the log well past one big page.
          const all = await list({ ...filter, limit: String(6 * (limit as number)) });
          const walked: Event[] = [];
          let cursor: string | null = null;
          do {
            const page = await list({ ...filter, limit: String(limit), ...(cursor && { cursor }) });
            walked.push(...page.events);
            cursor = page.next_cursor;
          } while (cursor !== null && walked.length < all.events.length);
          expect(walked.slice(0, all.events.length).map((e) => e.id)).toEqual(all.events.map((e) => e.id));
          // When the big page held everything, so did the walk, and it ended there.
          if (all.next_cursor === null) {
            expect(walked).toHaveLength(all.events.length);
            expect(cursor).toBeNull();
          }
        }),
        { numRuns: RUNS.paging },
      );
    });
  });
});
