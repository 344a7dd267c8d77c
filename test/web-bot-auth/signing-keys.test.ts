import { generateKeyPairSync } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { signInOwner } from '../helpers/owner.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';

const DIRECTORY = '/.well-known/http-message-signatures-directory';
const fresh = () => `owner-${Math.random().toString(36).slice(2)}@example.com`;

function ed25519() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privateJwk: privateKey.export({ format: 'jwk' }) as Record<string, string>,
    jwk: publicKey.export({ format: 'jwk' }) as Record<string, string>,
  };
}

describe(`request-signing keys: registration, directory and lookup (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  beforeAll(async () => {
    smtp = await startSmtp();
    server = await startTestServer({ SMTP_URL: smtp.url, SIGNING_KEYS_MAX_AGE_SECONDS: '42' });
  });
  afterAll(async () => {
    await server?.close();
    await smtp?.close();
  });

  const directoryKids = async () => {
    const res = await server.app.inject({ method: 'GET', url: DIRECTORY });
    return (res.json().keys as { kid: string }[]).map((k) => k.kid);
  };
  const lookup = (kid: string) => server.app.inject({ method: 'GET', url: `/api/agents/by-signing-key/${encodeURIComponent(kid)}` });
  const audited = async (agentId: string) =>
    (await server.adminCall('GET', `/admin/audit?agent_id=${agentId}`)).json.events
      .filter((e: { event: string }) => e.event.startsWith('signing_key_'))
      .map((e: { event: string; actor: string; detail: { kid: string } }) => [e.event, e.actor, e.detail.kid]);

  it('registers an Ed25519 public JWK under its thumbprint, lists it, and refuses private, other-curve and mismatched keys', async () => {
    const agent = await server.createAgent();
    const key = ed25519();
    const kid = await calculateJwkThumbprint(key.jwk, 'sha256');
    const path = `/admin/agents/${agent.agent_id}/signing-keys`;

    const refused = async (jwk: unknown) => {
      const res = await server.adminCall('POST', path, { jwk });
      expect(res.statusCode).toBe(400);
      expect(res.json.error).toBe('invalid_request');
      return res.json.error_description as string;
    };
    expect(await refused(key.privateJwk)).toMatch(/private key \(member "d"\)/);
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    expect(await refused(p256)).toMatch(/Ed25519/);
    expect(await refused({ ...key.jwk, crv: 'X25519' })).toMatch(/Ed25519/);
    expect(await refused({ ...key.jwk, kid: 'my-own-name' })).toMatch(/thumbprint/);

    const added = await server.adminCall('POST', path, { jwk: { ...key.jwk, kid } });
    expect(added.statusCode).toBe(201);
    expect(added.json).toMatchObject({ kid, alg: 'EdDSA' });
    expect((await server.adminCall('POST', path, { jwk: key.jwk })).statusCode).toBe(409);
    // One purpose per key: the same key is not an assertion key of that agent too.
    expect((await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk: key.jwk })).statusCode).toBe(409);
    // ... nor another agent's request-signing key: a kid names one agent.
    const other = await server.createAgent();
    expect((await server.adminCall('POST', `/admin/agents/${other.agent_id}/signing-keys`, { jwk: key.jwk })).statusCode).toBe(409);

    const listed = await server.adminCall('GET', path);
    expect(listed.json.keys.map((k: { kid: string; jwk: object }) => [k.kid, k.jwk])).toEqual([[kid, { kty: 'OKP', crv: 'Ed25519', x: key.jwk.x }]]);
    // Request-signing keys are not assertion keys.
    expect((await server.adminCall('GET', `/admin/agents/${agent.agent_id}/keys`)).json.keys).toEqual([]);
    expect((await server.adminCall('GET', '/admin/agents/no-such-agent/signing-keys')).statusCode).toBe(404);

    expect(await directoryKids()).toContain(kid);
    expect((await server.adminCall('DELETE', `${path}/${kid}`)).statusCode).toBe(204);
    expect((await server.adminCall('DELETE', `${path}/${kid}`)).statusCode).toBe(404);
    expect(await directoryKids()).not.toContain(kid);
    expect(await audited(agent.agent_id)).toEqual([
      ['signing_key_deleted', 'admin', kid],
      ['signing_key_added', 'admin', kid],
    ]);
  });

  it('serves the directory as the draft asks: media type, max-age, content digest and a signature by the key it lists first', async () => {
    const agent = await server.createAgent();
    const key = ed25519();
    const kid = (await server.adminCall('POST', `/admin/agents/${agent.agent_id}/signing-keys`, { jwk: key.jwk })).json.kid;
    const res = await server.app.inject({ method: 'GET', url: DIRECTORY, headers: { host: 'auth.example' } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/http-message-signatures-directory+json');
    expect(res.headers['cache-control']).toBe('public, max-age=42');
    const { keys } = res.json() as { keys: Record<string, string>[] };
    expect(keys).toContainEqual({ kty: 'OKP', crv: 'Ed25519', x: key.jwk.x, kid });
    for (const listed of keys) expect(listed.kid).toBe(await calculateJwkThumbprint(listed, 'sha256'));

    const { createHash, createPublicKey, verify } = await import('node:crypto');
    expect(res.headers['content-digest']).toBe(`sha-256=:${createHash('sha256').update(res.rawPayload).digest('base64')}:`);
    const input = String(res.headers['signature-input']);
    expect(input).toMatch(
      new RegExp(
        `^sig1=\\("@authority";req "content-digest"\\);created=\\d+;expires=\\d+;keyid="${keys[0].kid}";alg="ed25519";tag="http-message-signatures-directory"$`,
      ),
    );
    const base = `"@authority";req: auth.example\n"content-digest": ${res.headers['content-digest']}\n"@signature-params": ${input.slice('sig1='.length)}`;
    const signature = Buffer.from(/^sig1=:(.+):$/.exec(String(res.headers.signature))![1], 'base64');
    const directoryKey = createPublicKey({ key: keys[0], format: 'jwk' });
    expect(verify(null, Buffer.from(base), directoryKey, signature)).toBe(true);
    expect(verify(null, Buffer.from(base.replace('auth.example', 'evil.example')), directoryKey, signature)).toBe(false);
    // The directory's own key belongs to no agent.
    expect((await lookup(keys[0].kid)).statusCode).toBe(404);
  });

  it('answers who holds a key (never the email), with a max-age no longer than the directory’s; a deactivated agent leaves the directory at once', async () => {
    const agent = await server.createAgent();
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { name: 'Shopping bot' });
    const kid = (await server.adminCall('POST', `/admin/agents/${agent.agent_id}/signing-keys`, { jwk: ed25519().jwk })).json.kid;

    const found = await lookup(kid);
    expect(found.statusCode).toBe(200);
    expect(found.json()).toEqual({ agent_id: agent.agent_id, name: 'Shopping bot', owner_email_verified: false, active: true });
    expect(found.body).not.toContain(agent.email);
    expect(found.headers['cache-control']).toBe('public, max-age=42');
    const unknown = await lookup('AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: 'not_found' });
    expect((await lookup('bad\u0001kid')).json()).toMatchObject({ error: 'invalid_request' });

    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false });
    expect(await directoryKids()).not.toContain(kid);
    expect((await lookup(kid)).json()).toMatchObject({ active: false });
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: true });
    expect(await directoryKids()).toContain(kid);

    // The kill switch withdraws the agent's request-signing keys with its grants.
    expect((await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`)).statusCode).toBe(200);
    expect(await directoryKids()).not.toContain(kid);
    expect((await lookup(kid)).statusCode).toBe(404);

    const metrics = (await server.admin.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(/agent_auth_signing_key_reads_total\{read="directory"\} [1-9]/);
    expect(metrics).toMatch(/agent_auth_signing_key_reads_total\{read="lookup_found"\} [1-9]/);
    expect(metrics).toMatch(/agent_auth_signing_key_reads_total\{read="lookup_unknown"\} [1-9]/);
  });

  it('lets owners manage their own agents’ signing keys (audited as theirs), not another owner’s', async () => {
    const owner = await signInOwner(server.app, smtp, fresh());
    const stranger = await signInOwner(server.app, smtp, fresh());
    const agentId = (await owner.call('POST', '/account/api/agents', { name: 'Signer' })).json().agent_id;
    const key = ed25519();
    const path = `/account/api/agents/${agentId}/signing-keys`;

    expect((await stranger.call('POST', path, { jwk: key.jwk })).statusCode).toBe(404);
    expect((await stranger.call('GET', path)).statusCode).toBe(404);
    expect((await owner.call('POST', path, { jwk: key.privateJwk })).statusCode).toBe(400);
    const added = await owner.call('POST', path, { jwk: key.jwk });
    expect(added.statusCode).toBe(201);
    const { kid } = added.json();
    expect((await owner.call('GET', path)).json().keys.map((k: { kid: string }) => k.kid)).toEqual([kid]);
    // The portal's agent page lists it, with a form to paste another.
    const portalPage = (await owner.call('GET', `/account/agents/${agentId}`)).body;
    expect(portalPage).toMatch(new RegExp(`<table id="signing-keys-table">[\\s\\S]*<tr data-kid="${kid}">`));
    expect(portalPage).toContain(`data-api="/account/api/agents/${agentId}/signing-keys"`);
    expect((await stranger.call('DELETE', `${path}/${kid}`)).statusCode).toBe(404);
    // An owner's verified email shows in the lookup, the address itself does not.
    expect((await lookup(kid)).json()).toMatchObject({ agent_id: agentId, name: 'Signer', owner_email_verified: true, active: true });

    // The owner's kill switch withdraws the keys of all their agents.
    expect((await owner.call('POST', '/account/api/revoke-all', {})).statusCode).toBe(204);
    expect(await directoryKids()).not.toContain(kid);
    expect((await owner.call('POST', path, { jwk: key.jwk })).statusCode).toBe(201);
    expect((await owner.call('DELETE', `${path}/${kid}`)).statusCode).toBe(204);
    expect(await audited(agentId)).toEqual([
      ['signing_key_deleted', 'owner', kid],
      ['signing_key_added', 'owner', kid],
      ['signing_key_added', 'owner', kid],
    ]);
  });
});
