import { generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentAuthClient, type AgentAuthClientOptions, InvalidCredentialsError, keyFromPrivateKey } from '../../src/agent/index.js';
import { storeName } from '../helpers/database.js';
import { authorizeUrl, pkce } from '../helpers/flow.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';

type KeyOptions = Omit<AgentAuthClientOptions, 'baseUrl' | 'agentId' | 'model'>;

describe(`the TypeScript SDK signs in with a key (${storeName})`, () => {
  let server: ListeningServer;
  let client: { client_id: string; redirect_uris: string[] };

  beforeAll(async () => {
    server = await startListeningServer();
    client = await server.createClient();
  });
  afterAll(() => server?.close());

  /** A key-only agent holding the public half of `privateKey`; its id and the key's kid. */
  async function keyOnlyAgent(privateKey: KeyObject) {
    const agent = await server.createAgent();
    const jwk = (await import('node:crypto')).createPublicKey(privateKey).export({ format: 'jwk' });
    const { json } = await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk });
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { secret_enabled: false });
    return { agentId: agent.agent_id as string, kid: json.kid as string, secret: agent.agent_secret as string };
  }

  /** The person's browser: opens the sign-in page, then completes it once the agent is in. */
  async function browser() {
    const res = await fetch(
      `${server.issuer}${authorizeUrl({
        client_id: client.client_id,
        redirect_uri: client.redirect_uris[0],
        response_type: 'code',
        state: 's',
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      })}`,
    );
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const html = await res.text();
    const page = { url: () => `${server.issuer}/authorize`, content: async () => html };
    const requestId = /<meta name="request-id" content="([^"]+)">/.exec(html)![1];
    const complete = async () => {
      for (;;) {
        const state = await (await fetch(`${server.issuer}/api/check-status?request_id=${requestId}&wait=25&last_status=pending`)).json();
        if (state.status !== 'pending') break;
      }
      const done = await fetch(`${server.issuer}/authorize/complete?request_id=${requestId}`, { headers: { cookie }, redirect: 'manual' });
      return new URL(done.headers.get('location')!).searchParams.get('code');
    };
    return { page, requestId, complete };
  }

  async function signIn(agentId: string, options: KeyOptions) {
    const sdk = new AgentAuthClient({ baseUrl: server.issuer, agentId, model: 'model-1', ...options } as AgentAuthClientOptions);
    const { page, complete } = await browser();
    const [result, code] = await Promise.all([sdk.signIn(page, { expectedWebsite: 'https://shop.example', intervalMs: 50 }), complete()]);
    expect(code).toBeTruthy();
    return result.status;
  }

  const ed = generateKeyPairSync('ed25519').privateKey;
  const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

  it('with a KeyObject, a JWK or PEM, of Ed25519 or P-256', async () => {
    for (const privateKey of [ed, p256]) {
      const { agentId } = await keyOnlyAgent(privateKey);
      for (const form of [privateKey, privateKey.export({ format: 'jwk' }), privateKey.export({ format: 'pem', type: 'pkcs8' }) as string]) {
        expect(await signIn(agentId, { privateKey: form })).toBe('completed');
      }
    }
  });

  it('with a sign callback, for a key held elsewhere', async () => {
    const { agentId, kid } = await keyOnlyAgent(p256);
    // Another process would hold the key; the SDK only ever sees signatures.
    const vault = async (data: Uint8Array) => sign('sha256', data, { key: p256, dsaEncoding: 'ieee-p1363' });
    expect(await signIn(agentId, { sign: vault, keyId: kid, algorithm: 'ES256' })).toBe('completed');
    expect((await keyFromPrivateKey(p256)).keyId).toBe(kid);
  });

  it('refuses a key the server does not hold, and the secret of a key-only agent, as invalid credentials', async () => {
    const { agentId, kid, secret } = await keyOnlyAgent(ed);
    const stranger = generateKeyPairSync('ed25519').privateKey;
    for (const options of [{ privateKey: stranger }, { privateKey: stranger, keyId: kid }, { agentSecret: secret }] as KeyOptions[]) {
      const sdk = new AgentAuthClient({ baseUrl: server.issuer, agentId, model: 'm', ...options } as AgentAuthClientOptions);
      const { requestId } = await browser();
      await expect(sdk.authenticate(requestId)).rejects.toBeInstanceOf(InvalidCredentialsError);
    }
  });

  it('takes exactly one way to prove who the agent is', () => {
    const make = (options: object) => () =>
      new AgentAuthClient({ baseUrl: server.issuer, agentId: 'a', model: 'm', ...options } as AgentAuthClientOptions);
    expect(make({})).toThrow(/exactly one of agentSecret, privateKey and sign/);
    expect(make({ agentSecret: 's', privateKey: ed })).toThrow(/exactly one/);
  });
});
