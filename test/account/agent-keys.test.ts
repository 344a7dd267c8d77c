import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAssertion, keyFromPrivateKey } from '../../src/agent/index.js';
import { storeName } from '../helpers/database.js';
import { startAuthorize } from '../helpers/flow.js';
import { signInOwner } from '../helpers/owner.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';

const fresh = () => `owner-${Math.random().toString(36).slice(2)}@example.com`;
type Owner = Awaited<ReturnType<typeof signInOwner>>;

function keyPair(curve: 'ed25519' | 'P-256') {
  const { privateKey, publicKey } = curve === 'ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, jwk: publicKey.export({ format: 'jwk' }) as Record<string, string> };
}

describe(`owners register their agents' keys (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  beforeAll(async () => {
    smtp = await startSmtp();
    server = await startTestServer({ SMTP_URL: smtp.url });
    client = await server.createClient();
  });
  afterAll(async () => {
    await server?.close();
    await smtp?.close();
  });

  const newAgent = async (owner: Owner): Promise<string> =>
    (await owner.call('POST', '/account/api/agents', { name: 'Keyed agent' })).json().agent_id;
  /** One authenticate call signed by `privateKey` (named by its thumbprint): its status code. */
  async function signInWith(agentId: string, privateKey: KeyObject) {
    const { requestId } = await startAuthorize(server, client);
    const agentAssertion = await createAssertion(await keyFromPrivateKey(privateKey), { agentId, issuer: ISSUER, requestId });
    const res = await server.app.inject({
      method: 'POST',
      url: '/api/agent/authenticate',
      payload: { request_id: requestId, agent_id: agentId, agent_assertion: agentAssertion, model: 'model-1' },
    });
    return res.statusCode;
  }
  const actions = async (agentId: string) =>
    (await server.adminCall('GET', `/admin/audit?agent_id=${agentId}`)).json.events
      .filter((e: { event: string }) => e.event.startsWith('agent_key_'))
      .map((e: { event: string; actor: string; detail: { kid: string } }) => [e.event, e.actor, e.detail.kid]);

  it('adds Ed25519 and P-256 keys, lists them, and deletes one, which then no longer signs in', async () => {
    const owner = await signInOwner(server.app, smtp, fresh());
    const agentId = await newAgent(owner);
    const ed = keyPair('ed25519');
    const ec = keyPair('P-256');

    const added = await owner.call('POST', `/account/api/agents/${agentId}/keys`, { jwk: ed.jwk });
    expect(added.statusCode).toBe(201);
    expect(Object.keys(added.json()).sort()).toEqual(['alg', 'created_at', 'kid']);
    const edKid = await calculateJwkThumbprint(ed.jwk, 'sha256');
    expect(added.json()).toMatchObject({ kid: edKid, alg: 'EdDSA' });
    const ecAdded = await owner.call('POST', `/account/api/agents/${agentId}/keys`, { jwk: { ...ec.jwk, kid: 'phone-2026' } });
    expect(ecAdded.statusCode).toBe(201);
    expect(ecAdded.json()).toMatchObject({ kid: 'phone-2026', alg: 'ES256' });
    expect(await owner.call('POST', `/account/api/agents/${agentId}/keys`, { jwk: ed.jwk })).toMatchObject({ statusCode: 409 });

    const listed = await owner.call('GET', `/account/api/agents/${agentId}/keys`);
    expect(listed.statusCode).toBe(200);
    expect(listed.headers['cache-control']).toBe('no-store');
    expect(listed.json().keys.map((k: { kid: string; alg: string; jwk: object }) => [k.kid, k.alg, k.jwk])).toEqual([
      [edKid, 'EdDSA', { kty: 'OKP', crv: 'Ed25519', x: ed.jwk.x }],
      ['phone-2026', 'ES256', { kty: 'EC', crv: 'P-256', x: ec.jwk.x, y: ec.jwk.y }],
    ]);
    // The operators see the same keys.
    expect((await server.adminCall('GET', `/admin/agents/${agentId}/keys`)).json.keys).toHaveLength(2);

    expect(await signInWith(agentId, ed.privateKey)).toBe(200);
    const deleted = await owner.call('DELETE', `/account/api/agents/${agentId}/keys/${edKid}`);
    expect(deleted.statusCode).toBe(204);
    expect(deleted.body).toBe('');
    expect(await signInWith(agentId, ed.privateKey)).toBe(401);
    expect((await owner.call('GET', `/account/api/agents/${agentId}/keys`)).json().keys.map((k: { kid: string }) => k.kid)).toEqual(['phone-2026']);
    expect(await owner.call('DELETE', `/account/api/agents/${agentId}/keys/${edKid}`)).toMatchObject({ statusCode: 404 });

    expect(await actions(agentId)).toEqual([
      ['agent_key_deleted', 'owner', edKid],
      ['agent_key_added', 'owner', 'phone-2026'],
      ['agent_key_added', 'owner', edKid],
    ]);
  });

  it('refuses a private JWK or another kind of key with 400, and stores nothing', async () => {
    const owner = await signInOwner(server.app, smtp, fresh());
    const agentId = await newAgent(owner);
    const cases: [unknown, RegExp][] = [
      [keyPair('ed25519').privateKey.export({ format: 'jwk' }), /private key \(member "d"\)/],
      [keyPair('P-256').privateKey.export({ format: 'jwk' }), /private key \(member "d"\)/],
      [{ kty: 'oct', k: 'c2VjcmV0' }, /private key/],
      [generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ format: 'jwk' }), /Ed25519.*P-256/],
    ];
    for (const [jwk, description] of cases) {
      const res = await owner.call('POST', `/account/api/agents/${agentId}/keys`, { jwk });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_request');
      expect(res.json().error_description).toMatch(description);
    }
    const unknownField = await owner.call('POST', `/account/api/agents/${agentId}/keys`, { jwk: keyPair('ed25519').jwk, extra: 1 });
    expect(unknownField).toMatchObject({ statusCode: 400 });
    expect((await owner.call('GET', `/account/api/agents/${agentId}/keys`)).json().keys).toEqual([]);
    expect(await actions(agentId)).toEqual([]);
  });

  it('answers another owner’s agent, and a kid of it, as not found; without a session 401', async () => {
    const owner = await signInOwner(server.app, smtp, fresh());
    const stranger = await signInOwner(server.app, smtp, fresh());
    const agentId = await newAgent(owner);
    const operatorsAgent = await server.createAgent();
    const { jwk } = keyPair('ed25519');
    const { kid } = (await owner.call('POST', `/account/api/agents/${agentId}/keys`, { jwk })).json();

    for (const id of [agentId, operatorsAgent.agent_id, 'agent_nobody']) {
      const calls = [
        stranger.call('POST', `/account/api/agents/${id}/keys`, { jwk: keyPair('ed25519').jwk }),
        stranger.call('GET', `/account/api/agents/${id}/keys`),
        stranger.call('DELETE', `/account/api/agents/${id}/keys/${kid}`),
      ];
      for (const res of await Promise.all(calls)) {
        expect(res.statusCode).toBe(404);
        expect(res.json()).toEqual({ error: 'not_found', error_description: `no agent with id ${id}` });
      }
    }
    // A kid of another owner's agent, through one's own agent: 404, and that key stays.
    const strangersAgent = await newAgent(stranger);
    expect(await stranger.call('DELETE', `/account/api/agents/${strangersAgent}/keys/${kid}`)).toMatchObject({ statusCode: 404 });
    // The owner's own agent, with a kid it does not hold: 404 too.
    expect(await owner.call('DELETE', `/account/api/agents/${agentId}/keys/no-such-kid`)).toMatchObject({ statusCode: 404 });
    expect((await owner.call('GET', `/account/api/agents/${agentId}/keys`)).json().keys).toHaveLength(1);

    const anonymous = [
      server.app.inject({ method: 'POST', url: `/account/api/agents/${agentId}/keys`, headers: { origin: ISSUER }, payload: { jwk } }),
      server.app.inject({ url: `/account/api/agents/${agentId}/keys` }),
      server.app.inject({ method: 'DELETE', url: `/account/api/agents/${agentId}/keys/${kid}`, headers: { 'content-type': 'application/json' } }),
    ];
    for (const res of await Promise.all(anonymous)) {
      expect(res.statusCode).toBe(401);
      expect(res.json().error).toBe('login_required');
    }
    expect((await owner.call('GET', `/account/api/agents/${agentId}/keys`)).json().keys).toHaveLength(1);
  });

  it('refuses a change that is not JSON or comes from another origin (CSRF)', async () => {
    const owner = await signInOwner(server.app, smtp, fresh());
    const agentId = await newAgent(owner);
    const { jwk } = keyPair('ed25519');
    const { kid } = (await owner.call('POST', `/account/api/agents/${agentId}/keys`, { jwk })).json();
    const send = (method: 'POST' | 'DELETE', url: string, headers: Record<string, string>, payload?: string) =>
      server.app.inject({ method, url, headers: { cookie: owner.cookie, ...headers }, ...(payload === undefined ? {} : { payload }) });
    const other = JSON.stringify({ jwk: keyPair('ed25519').jwk });
    const keys = `/account/api/agents/${agentId}/keys`;

    const asForm = await send(
      'POST',
      keys,
      { 'content-type': 'application/x-www-form-urlencoded', origin: ISSUER },
      `jwk=${encodeURIComponent(other)}`,
    );
    expect(asForm.statusCode).toBe(415);
    expect((await send('POST', keys, { 'content-type': 'text/plain', origin: ISSUER }, other)).statusCode).toBe(415);
    const foreign = await send('POST', keys, { 'content-type': 'application/json', origin: 'https://evil.example' }, other);
    expect(foreign.statusCode).toBe(403);
    expect(foreign.json().error).toBe('forbidden');
    expect((await send('POST', keys, { 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' }, other)).statusCode).toBe(403);
    expect((await send('DELETE', `${keys}/${kid}`, { origin: ISSUER })).statusCode).toBe(415);
    expect((await send('DELETE', `${keys}/${kid}`, { 'content-type': 'application/json', origin: 'https://evil.example' })).statusCode).toBe(403);

    expect((await owner.call('GET', keys)).json().keys.map((k: { kid: string }) => k.kid)).toEqual([kid]);
  });

  it('records the operators’ key changes, over the admin API and the CLI’s routes, as the admin’s', async () => {
    const agent = await server.createAgent();
    const { jwk } = keyPair('P-256');
    const { kid } = (await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk })).json;
    expect((await server.adminCall('DELETE', `/admin/agents/${agent.agent_id}/keys/${kid}`)).statusCode).toBe(204);
    expect(await actions(agent.agent_id)).toEqual([
      ['agent_key_deleted', 'admin', kid],
      ['agent_key_added', 'admin', kid],
    ]);
  });
});
