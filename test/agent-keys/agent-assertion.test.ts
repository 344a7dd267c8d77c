import { generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpired } from '../../src/jobs/purge.js';
import { storeName } from '../helpers/database.js';
import { startAuthorize } from '../helpers/flow.js';
import { ISSUER, startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';

type Alg = 'EdDSA' | 'ES256';

/** A fresh key pair as an agent keeps it: the private key, and the public JWK it registers. */
function keyPair(alg: Alg = 'EdDSA') {
  const { privateKey, publicKey } = alg === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { alg, privateKey, jwk: publicKey.export({ format: 'jwk' }) as Record<string, string> };
}

interface AssertionOptions {
  key: KeyObject;
  alg: Alg;
  kid: string;
  agentId: string;
  requestId: string;
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
  iat?: number;
  lifetime?: number;
}

/** An assertion as the protocol wants it, each part overridable to break it. */
function assertion(o: AssertionOptions) {
  const iat = o.iat ?? Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: o.agentId,
    sub: o.agentId,
    aud: ISSUER,
    request_id: o.requestId,
    iat,
    exp: iat + (o.lifetime ?? 60),
    jti: randomUUID(),
    ...o.claims,
  })
    .setProtectedHeader({ alg: o.alg, kid: o.kid, typ: 'agent-auth+jwt', ...o.header })
    .sign(o.key);
}

describe(`agents that sign in with a key (${storeName})`, () => {
  let server: TestServer;
  let client: { client_id: string; client_secret: string; redirect_uris: string[] };
  let agent: { agent_id: string; agent_secret: string };
  const ed = keyPair('EdDSA');
  const ec = keyPair('ES256');
  let edKid: string;
  let ecKid: string;

  beforeAll(async () => {
    server = await startTestServer();
    client = await server.createClient();
    agent = await server.createAgent();
    edKid = (await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk: ed.jwk })).json.kid;
    ecKid = (await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk: ec.jwk })).json.kid;
  });
  afterAll(() => server?.close());

  const authenticate = (body: Record<string, unknown>, target = server) =>
    target.app.inject({ method: 'POST', url: '/api/agent/authenticate', payload: { model: 'model-1', ...body } });
  const newRequest = async () => (await startAuthorize(server, client)).requestId;
  /** The reason the audit log gives for the last failed authentication of this request. */
  const reasonFor = async (requestId: string) =>
    (await server.services.store.auditLog.list({ requestId, event: 'agent_authentication_failed', limit: 1 }))[0]?.reason;

  /** Authenticates with `token` and expects the wrong-secret answer, the audit log giving `reason`. */
  async function refused(requestId: string, token: string, reason: string, agentId = agent.agent_id) {
    const res = await authenticate({ request_id: requestId, agent_id: agentId, agent_assertion: token });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'invalid_credentials', error_description: 'agent authentication failed' });
    expect(await reasonFor(requestId)).toBe(reason);
  }

  describe('registering keys (admin API)', () => {
    it('names a key by its RFC 7638 thumbprint and lists it with its public half only', async () => {
      expect(edKid).toBe(await calculateJwkThumbprint(ed.jwk, 'sha256'));
      const { statusCode, json } = await server.adminCall('GET', `/admin/agents/${agent.agent_id}/keys`);
      expect(statusCode).toBe(200);
      expect(json.keys.map((k: { kid: string; alg: string }) => [k.kid, k.alg])).toEqual([
        [edKid, 'EdDSA'],
        [ecKid, 'ES256'],
      ]);
      expect(json.keys[1].jwk).toEqual({ kty: 'EC', crv: 'P-256', x: ec.jwk.x, y: ec.jwk.y });
    });

    it('answers 201 with kid, alg and created_at, keeping a kid the JWK names', async () => {
      const other = await server.createAgent();
      const { statusCode, json } = await server.adminCall('POST', `/admin/agents/${other.agent_id}/keys`, {
        jwk: { ...keyPair().jwk, kid: 'laptop-2026' },
      });
      expect(statusCode).toBe(201);
      expect(Object.keys(json).sort()).toEqual(['alg', 'created_at', 'kid']);
      expect(json).toMatchObject({ kid: 'laptop-2026', alg: 'EdDSA' });
    });

    it('refuses private keys, other key types, broken points and a kid twice, with clear answers', async () => {
      const other = await server.createAgent();
      const add = (jwk: unknown) => server.adminCall('POST', `/admin/agents/${other.agent_id}/keys`, { jwk });
      const privateJwk = keyPair().privateKey.export({ format: 'jwk' });
      const cases: [unknown, number, RegExp][] = [
        [privateJwk, 400, /private key \(member "d"\)/],
        [keyPair('ES256').privateKey.export({ format: 'jwk' }), 400, /private key/],
        [generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' }), 400, /Ed25519.*P-256/],
        [{ kty: 'oct', k: 'c2VjcmV0' }, 400, /private key \(member "k"\)/],
        [{ ...ec.jwk, y: ec.jwk.x }, 400, /not a valid public key/],
        [{ ...ed.jwk, alg: 'ES256' }, 400, /alg must be EdDSA/],
        [{ ...ed.jwk, kid: 'no spaces allowed' }, 400, /kid must be an id/],
        ['not an object', 400, /jwk/],
      ];
      for (const [jwk, status, description] of cases) {
        const { statusCode, json } = await add(jwk);
        expect(statusCode, JSON.stringify(jwk)).toBe(status);
        expect(json.error).toBe('invalid_request');
        expect(json.error_description).toMatch(description);
      }
      expect((await add(ed.jwk)).statusCode).toBe(201);
      expect(await add(ed.jwk)).toMatchObject({ statusCode: 409, json: { error: 'key_exists' } });
      expect((await server.adminCall('GET', `/admin/agents/${other.agent_id}/keys`)).json.keys).toHaveLength(1);
      expect(await server.adminCall('POST', '/admin/agents/agent_nobody/keys', { jwk: ed.jwk })).toMatchObject({ statusCode: 404 });
      expect(await server.adminCall('GET', '/admin/agents/agent_nobody/keys')).toMatchObject({ statusCode: 404 });
    });

    it('holds at most ten keys per agent', async () => {
      const other = await server.createAgent();
      for (let i = 0; i < 10; i++) {
        expect((await server.adminCall('POST', `/admin/agents/${other.agent_id}/keys`, { jwk: keyPair().jwk })).statusCode).toBe(201);
      }
      const { statusCode, json } = await server.adminCall('POST', `/admin/agents/${other.agent_id}/keys`, { jwk: keyPair().jwk });
      expect(statusCode).toBe(400);
      expect(json.error_description).toMatch(/at most 10 keys/);
    });
  });

  describe('authenticate with agent_assertion', () => {
    it.each(['EdDSA', 'ES256'] as const)('signs in with an %s key, noting when the key was last used', async (alg) => {
      const requestId = await newRequest();
      const [key, kid] = alg === 'EdDSA' ? [ed.privateKey, edKid] : [ec.privateKey, ecKid];
      const res = await authenticate({
        request_id: requestId,
        agent_id: agent.agent_id,
        agent_assertion: await assertion({ key, alg, kid, agentId: agent.agent_id, requestId }),
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ status: 'authenticated', request_id: requestId, client_id: client.client_id });
      const { json } = await server.adminCall('GET', `/admin/agents/${agent.agent_id}/keys`);
      expect(json.keys.find((k: { kid: string }) => k.kid === kid).last_used_at).not.toBeNull();
    });

    it('refuses a replay, also on another instance over the same database', async () => {
      const requestId = await newRequest();
      const token = await assertion({ key: ed.privateKey, alg: 'EdDSA', kid: edKid, agentId: agent.agent_id, requestId });
      expect((await authenticate({ request_id: requestId, agent_id: agent.agent_id, agent_assertion: token })).statusCode).toBe(200);
      await refused(requestId, token, 'assertion_replayed');

      const second = await startSecondInstance(server);
      try {
        const other = await newRequest();
        const fresh = await assertion({ key: ed.privateKey, alg: 'EdDSA', kid: edKid, agentId: agent.agent_id, requestId: other });
        expect((await authenticate({ request_id: other, agent_id: agent.agent_id, agent_assertion: fresh })).statusCode).toBe(200);
        const res = await authenticate({ request_id: other, agent_id: agent.agent_id, agent_assertion: fresh }, second);
        expect(res.statusCode).toBe(401);
        expect(await reasonFor(other)).toBe('assertion_replayed');
      } finally {
        await second.close();
      }
    });

    it('refuses every assertion that does not hold with the wrong-secret answer, the reason in the audit log only', async () => {
      const now = Math.floor(Date.now() / 1000);
      const base = { key: ed.privateKey, alg: 'EdDSA' as const, kid: edKid, agentId: agent.agent_id };
      const stranger = keyPair();
      const other = await server.createAgent();
      const cases: [string, (requestId: string) => Promise<string>][] = [
        ['assertion_expired', (requestId) => assertion({ ...base, requestId, iat: now - 120 })],
        ['assertion_too_long', (requestId) => assertion({ ...base, requestId, lifetime: 61 })],
        ['assertion_not_yet_valid', (requestId) => assertion({ ...base, requestId, iat: now + 45, lifetime: 10 })],
        ['wrong_audience', (requestId) => assertion({ ...base, requestId, claims: { aud: 'https://other.example' } })],
        ['wrong_audience', (requestId) => assertion({ ...base, requestId, claims: { aud: [ISSUER] } })],
        ['wrong_request', async () => assertion({ ...base, requestId: await newRequest() })],
        ['unknown_key', (requestId) => assertion({ ...base, requestId, kid: 'no-such-key' })],
        ['wrong_key', (requestId) => assertion({ ...base, requestId, key: stranger.privateKey })],
        ['agent_mismatch', (requestId) => assertion({ ...base, requestId, claims: { iss: other.agent_id } })],
        ['agent_mismatch', (requestId) => assertion({ ...base, requestId, claims: { sub: other.agent_id } })],
        ['malformed_assertion', (requestId) => assertion({ ...base, requestId, header: { typ: 'JWT' } })],
        ['malformed_assertion', (requestId) => assertion({ ...base, requestId, header: { typ: 'application/agent-auth+jwt' } })],
        ['malformed_assertion', (requestId) => assertion({ ...base, requestId, claims: { jti: undefined } })],
        ['malformed_assertion', async () => 'not.a.jwt'],
        // An ES256 header on the Ed25519 key: the key's own algorithm or nothing.
        ['malformed_assertion', (requestId) => assertion({ ...base, requestId, key: ec.privateKey, alg: 'ES256' })],
      ];
      for (const [reason, make] of cases) {
        const requestId = await newRequest();
        await refused(requestId, await make(requestId), reason);
      }
      // A key registered to another agent does not sign for this one.
      const requestId = await newRequest();
      const otherKey = keyPair();
      const { json } = await server.adminCall('POST', `/admin/agents/${other.agent_id}/keys`, { jwk: otherKey.jwk });
      await refused(requestId, await assertion({ ...base, requestId, key: otherKey.privateKey, kid: json.kid }), 'unknown_key');
      await refused(requestId, await assertion({ ...base, requestId, agentId: 'agent_nobody' }), 'unknown_agent', 'agent_nobody');
    });

    it('allows 30 s of clock skew either way, and no more', async () => {
      const now = Math.floor(Date.now() / 1000);
      const base = { key: ed.privateKey, alg: 'EdDSA' as const, kid: edKid, agentId: agent.agent_id };
      // An agent's clock 25 s ahead (issued "in the future"), or 25 s behind (expired 25 s "ago"): taken.
      for (const times of [
        { iat: now + 25, lifetime: 30 },
        { iat: now - 85, lifetime: 60 },
      ]) {
        const requestId = await newRequest();
        const res = await authenticate({
          request_id: requestId,
          agent_id: agent.agent_id,
          agent_assertion: await assertion({ ...base, requestId, ...times }),
        });
        expect(res.statusCode, JSON.stringify(times)).toBe(200);
      }
      // 35 s off either way: refused.
      let requestId = await newRequest();
      await refused(requestId, await assertion({ ...base, requestId, iat: now + 35, lifetime: 30 }), 'assertion_not_yet_valid');
      requestId = await newRequest();
      await refused(requestId, await assertion({ ...base, requestId, iat: now - 95, lifetime: 60 }), 'assertion_expired');
    });

    it('refuses a deleted key at once', async () => {
      const other = await server.createAgent();
      const pair = keyPair('ES256');
      const { json } = await server.adminCall('POST', `/admin/agents/${other.agent_id}/keys`, { jwk: pair.jwk });
      const sign = (requestId: string) => assertion({ key: pair.privateKey, alg: 'ES256', kid: json.kid, agentId: other.agent_id, requestId });
      let requestId = await newRequest();
      expect((await authenticate({ request_id: requestId, agent_id: other.agent_id, agent_assertion: await sign(requestId) })).statusCode).toBe(200);
      expect((await server.adminCall('DELETE', `/admin/agents/${other.agent_id}/keys/${json.kid}`)).statusCode).toBe(204);
      expect((await server.adminCall('DELETE', `/admin/agents/${other.agent_id}/keys/${json.kid}`)).statusCode).toBe(404);
      requestId = await newRequest();
      await refused(requestId, await sign(requestId), 'unknown_key', other.agent_id);
    });

    it('refuses an inactive agent', async () => {
      const other = await server.createAgent();
      const pair = keyPair();
      const { json } = await server.adminCall('POST', `/admin/agents/${other.agent_id}/keys`, { jwk: pair.jwk });
      await server.adminCall('PATCH', `/admin/agents/${other.agent_id}`, { active: false });
      const requestId = await newRequest();
      await refused(
        requestId,
        await assertion({ key: pair.privateKey, alg: 'EdDSA', kid: json.kid, agentId: other.agent_id, requestId }),
        'inactive_agent',
        other.agent_id,
      );
    });

    it('takes exactly one of agent_secret and agent_assertion (400 otherwise)', async () => {
      const requestId = await newRequest();
      const token = await assertion({ key: ed.privateKey, alg: 'EdDSA', kid: edKid, agentId: agent.agent_id, requestId });
      for (const body of [{ agent_secret: agent.agent_secret, agent_assertion: token }, {}]) {
        const res = await authenticate({ request_id: requestId, agent_id: agent.agent_id, ...body });
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({
          error: 'invalid_request',
          error_description: expect.stringMatching(/exactly one of agent_secret and agent_assertion/),
        });
      }
      // Nothing was spent or changed: the assertion still works.
      expect((await authenticate({ request_id: requestId, agent_id: agent.agent_id, agent_assertion: token })).statusCode).toBe(200);
    });

    it('makes an agent key-only with secret_enabled: false', async () => {
      const other = await server.createAgent();
      const pair = keyPair();
      const { json } = await server.adminCall('POST', `/admin/agents/${other.agent_id}/keys`, { jwk: pair.jwk });
      const patched = await server.adminCall('PATCH', `/admin/agents/${other.agent_id}`, { secret_enabled: false });
      expect(patched).toMatchObject({ statusCode: 200, json: { agent_id: other.agent_id, secret_enabled: false } });
      expect((await server.adminCall('GET', `/admin/agents/${other.agent_id}`)).json.secret_enabled).toBe(false);

      let requestId = await newRequest();
      const res = await authenticate({ request_id: requestId, agent_id: other.agent_id, agent_secret: other.agent_secret });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'invalid_credentials', error_description: 'agent authentication failed' });
      expect(await reasonFor(requestId)).toBe('secret_disabled');
      requestId = await newRequest();
      const token = await assertion({ key: pair.privateKey, alg: 'EdDSA', kid: json.kid, agentId: other.agent_id, requestId });
      expect((await authenticate({ request_id: requestId, agent_id: other.agent_id, agent_assertion: token })).statusCode).toBe(200);

      await server.adminCall('PATCH', `/admin/agents/${other.agent_id}`, { secret_enabled: true });
      requestId = await newRequest();
      expect((await authenticate({ request_id: requestId, agent_id: other.agent_id, agent_secret: other.agent_secret })).statusCode).toBe(200);
    });

    it('forgets spent assertion ids in the purge once they could no longer be accepted', async () => {
      const { agentKeys } = server.services.store;
      expect(await agentKeys.spend(agent.agent_id, edKid, 'old-jti', new Date(Date.now() - 1000))).toBe(true);
      expect(await agentKeys.spend(agent.agent_id, edKid, 'live-jti', new Date(Date.now() + 60_000))).toBe(true);
      const removed = await purgeExpired(server.services, { auditRetentionDays: 90, auditRetentionWithoutAgentDays: 90, log: server.app.log });
      expect(removed.agent_assertion_jtis).toBeGreaterThanOrEqual(1);
      expect(await agentKeys.spend(agent.agent_id, edKid, 'old-jti', new Date(Date.now() + 60_000))).toBe(true);
      expect(await agentKeys.spend(agent.agent_id, edKid, 'live-jti', new Date(Date.now() + 60_000))).toBe(false);
    });
  });

  it('advertises both ways to authenticate in both metadata documents', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const json = (await server.app.inject({ url: path })).json();
      expect(json.agent_authentication_methods_supported).toEqual(['agent_secret', 'agent_assertion']);
      expect(json.agent_assertion_signing_alg_values_supported).toEqual(['EdDSA', 'ES256']);
    }
  });
});

describe(`assertion failures spend the same budget as wrong secrets (${storeName})`, () => {
  let server: TestServer;
  afterAll(() => server?.close());

  it('refuses the attacker after the per-agent budget, then a valid assertion too, and the owner elsewhere still gets in', async () => {
    server = await startTestServer({ RATE_LIMIT_AUTHENTICATE_PER_AGENT: '3' });
    const client = await server.createClient();
    const agent = await server.createAgent();
    const pair = keyPair();
    const { json } = await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk: pair.jwk });
    const sign = (requestId: string, key = pair.privateKey) => assertion({ key, alg: 'EdDSA', kid: json.kid, agentId: agent.agent_id, requestId });
    const send = async (remoteAddress: string, token: (requestId: string) => Promise<string>) => {
      const { requestId } = await startAuthorize(server, client);
      const payload = { request_id: requestId, agent_id: agent.agent_id, model: 'm', agent_assertion: await token(requestId) };
      return (await server.app.inject({ method: 'POST', url: '/api/agent/authenticate', payload, remoteAddress })).statusCode;
    };
    const stranger = keyPair().privateKey;
    // A wrong secret and wrong assertions fill one budget.
    const { requestId } = await startAuthorize(server, client);
    const wrongSecret = { request_id: requestId, agent_id: agent.agent_id, model: 'm', agent_secret: 'aa_as_wrong' };
    expect(
      (await server.app.inject({ method: 'POST', url: '/api/agent/authenticate', payload: wrongSecret, remoteAddress: '127.0.0.2' })).statusCode,
    ).toBe(401);
    expect(await send('127.0.0.2', (r) => sign(r, stranger))).toBe(401);
    expect(await send('127.0.0.2', (r) => sign(r, stranger))).toBe(401);
    expect(await send('127.0.0.2', (r) => sign(r))).toBe(429);
    expect(await send('127.0.0.1', (r) => sign(r))).toBe(200);
  });
});
