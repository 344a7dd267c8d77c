import { spawn } from 'node:child_process';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { signedFetch, signRequest } from '@agent-auth/agent';
import { type WebBotAuthResult, webBotAuthVerifier } from '@agent-auth/website/web-bot-auth';
import { type Component, signatureHeaders as httpsigHeaders } from 'http-message-sig';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeaders, verify } from 'web-bot-auth';
import { Ed25519Signer, verifierFromJWK } from 'web-bot-auth/crypto';
import { startWebsite } from '../../examples/website/server.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { cookiesOf, linkForm, mailedLink } from '../helpers/owner.js';
import { finished, repoRoot } from '../helpers/process.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';

const MAX_AGE = 1;
const SITE = 'https://shop.example/products?page=2';

function ed25519() {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { privateKey, privateJwk: privateKey.export({ format: 'jwk' }), jwk: publicKey.export({ format: 'jwk' }) as Record<string, string> };
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const refusal = (result: WebBotAuthResult) => (result.ok ? 'accepted' : result.reason);

// Cloudflare's web-bot-auth is the independent peer: it verifies what our SDK signs against the keys
// our directory serves, and signs requests our website kit must accept.
describe('signed agent requests with Cloudflare’s web-bot-auth as the peer', () => {
  let server: ListeningServer;
  let smtp: TestSmtp;
  const fetched: string[] = [];
  let kit: ReturnType<typeof webBotAuthVerifier>;

  beforeAll(async () => {
    smtp = await startSmtp();
    server = await startListeningServer({ SIGNING_KEYS_MAX_AGE_SECONDS: String(MAX_AGE), SMTP_URL: smtp.url });
    kit = webBotAuthVerifier({
      trustedIssuers: [server.issuer],
      refreshUnknownAfterSeconds: 0,
      fetch: (input, init) => {
        fetched.push(String(input));
        return fetch(input, init);
      },
    });
  });
  afterAll(async () => {
    await server?.close();
    await smtp?.close();
  });

  /** A new agent with a registered request-signing key (named `name`). */
  async function signingAgent(name = 'Signing agent') {
    const agent = await server.createAgent();
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { name });
    const key = ed25519();
    const { kid } = (await server.adminCall('POST', `/admin/agents/${agent.agent_id}/signing-keys`, { jwk: key.jwk })).json;
    return { ...agent, ...key, kid: kid as string };
  }
  const directory = async () =>
    (await (await fetch(`${server.issuer}/.well-known/http-message-signatures-directory`)).json()) as { keys: JsonWebKey[] };
  /** A request signed by Cloudflare's signer, with `params` and `components` as a test wants them. */
  async function cloudflareSigned(privateKey: KeyObject, params: { created?: Date; expires?: Date; components?: Component[] } = {}, url = SITE) {
    const headers = new Headers({ 'signature-agent': JSON.stringify(server.issuer) });
    const request = new Request(url, { headers });
    const now = Date.now();
    const signed = await signatureHeaders(request, await Ed25519Signer.fromJWK(privateKey.export({ format: 'jwk' }) as JsonWebKey), {
      created: params.created ?? new Date(now),
      expires: params.expires ?? new Date(now + 60_000),
      components: params.components,
    });
    headers.set('signature', signed.Signature);
    headers.set('signature-input', signed['Signature-Input']);
    return new Request(url, { headers });
  }

  it('Cloudflare verifies a request signed by our SDK against the key our directory serves', async () => {
    const agent = await signingAgent();
    const signed = await signRequest(new Request(SITE, { headers: { accept: 'text/html' } }), agent.privateJwk as JsonWebKey, {
      issuer: `${server.issuer}/`,
    });
    expect(signed.headers.get('signature-agent')).toBe(`"${server.issuer}"`);
    const input = signed.headers.get('signature-input')!;
    expect(input).toMatch(
      new RegExp(
        `^sig1=\\("@authority" "signature-agent"\\);created=(\\d+);expires=(\\d+);keyid="${agent.kid}";alg="ed25519";nonce="[A-Za-z0-9+/=]{88}";tag="web-bot-auth"$`,
      ),
    );
    const [, created, expires] = /created=(\d+);expires=(\d+)/.exec(input)!;
    expect(Number(expires) - Number(created)).toBe(300);

    const served = (await directory()).keys.find((k) => (k as { kid?: string }).kid === agent.kid)!;
    await expect(verify(signed, await verifierFromJWK(served))).resolves.toBeUndefined();
    // A KeyObject and a CryptoKey sign alike.
    const cryptoKey = await crypto.subtle.importKey('jwk', agent.privateJwk as JsonWebKey, { name: 'Ed25519' }, false, ['sign']);
    for (const key of [agent.privateKey, cryptoKey]) {
      await expect(
        verify(await signRequest(new Request(SITE), key, { issuer: server.issuer }), await verifierFromJWK(served)),
      ).resolves.toBeUndefined();
    }
    // And our kit agrees, naming the agent.
    expect(await kit.verify(signed)).toEqual({
      ok: true,
      agent: { agent_id: agent.agent_id, name: 'Signing agent', owner_email_verified: false, active: true, issuer: server.issuer, keyid: agent.kid },
    });
  });

  it('Cloudflare and our kit verify a request signed by our Python SDK', async () => {
    const agent = await signingAgent('Python agent');
    const script = [
      'import json, sys',
      'from agent_auth import RequestSigningKey',
      'key, issuer, url = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]',
      'print(json.dumps(RequestSigningKey(key, issuer=issuer).headers(url)))',
    ].join('\n');
    const child = spawn(process.env.PYTHON ?? 'python3', ['-c', script, JSON.stringify(agent.privateJwk), server.issuer, SITE], {
      cwd: `${repoRoot}/sdk/python`,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run = await finished(child);
    expect(run.code, run.stderr).toBe(0);
    const signed = new Request(SITE, { headers: JSON.parse(run.stdout) });
    const served = (await directory()).keys.find((k) => (k as { kid?: string }).kid === agent.kid)!;
    await expect(verify(signed, await verifierFromJWK(served))).resolves.toBeUndefined();
    expect(await kit.verify(signed)).toMatchObject({ ok: true, agent: { agent_id: agent.agent_id, name: 'Python agent' } });
  });

  it('our kit accepts a request Cloudflare’s signer made with a key registered at agent-auth', async () => {
    const agent = await signingAgent('Cloudflare-signed');
    const result = await kit.verify(await cloudflareSigned(agent.privateKey));
    expect(result).toMatchObject({ ok: true, agent: { agent_id: agent.agent_id, name: 'Cloudflare-signed' } });
  });

  it('refuses expired and future signatures, another tag, one that does not cover @authority, and a replay on another host', async () => {
    const agent = await signingAgent();
    const now = Date.now();
    expect(
      refusal(await kit.verify(await cloudflareSigned(agent.privateKey, { created: new Date(now - 600_000), expires: new Date(now - 300_000) }))),
    ).toBe('expired');
    expect(
      refusal(await kit.verify(await cloudflareSigned(agent.privateKey, { created: new Date(now + 300_000), expires: new Date(now + 600_000) }))),
    ).toBe('not_yet_valid');
    expect(refusal(await kit.verify(await cloudflareSigned(agent.privateKey, { components: ['signature-agent'] })))).toBe('missing_components');
    // Covering @authority alone while sending Signature-Agent leaves the directory's name unsigned.
    const unsignedAgent = await cloudflareSigned(agent.privateKey);
    const withoutAgent = new Request(SITE, {
      headers: {
        ...Object.fromEntries(unsignedAgent.headers),
        'signature-input': unsignedAgent.headers.get('signature-input')!.replace(' "signature-agent"', ''),
      },
    });
    expect(refusal(await kit.verify(withoutAgent))).toBe('missing_components');

    // Another tag, signed properly otherwise.
    const headers = new Headers({ 'signature-agent': JSON.stringify(server.issuer) });
    const otherTag = await httpsigHeaders(new Request(SITE, { headers }), {
      signer: await Ed25519Signer.fromJWK(agent.privateJwk as JsonWebKey),
      components: ['@authority', 'signature-agent'],
      created: new Date(now),
      expires: new Date(now + 60_000),
      tag: 'another-tag',
    });
    headers.set('signature', otherTag.Signature);
    headers.set('signature-input', otherTag['Signature-Input']);
    expect(refusal(await kit.verify(new Request(SITE, { headers })))).toBe('wrong_tag');

    // The same headers sent to another website: @authority differs, the signature does not hold.
    const signed = await signRequest(new Request(SITE), agent.privateKey, { issuer: server.issuer });
    expect(refusal(await kit.verify(signed))).toBe('accepted');
    const replayed = new Request('https://other.example/products?page=2', { headers: signed.headers });
    expect(refusal(await kit.verify(replayed))).toBe('bad_signature');
    await expect(verify(replayed, await verifierFromJWK(agent.jwk))).rejects.toThrow();
    // A website that names its own hosts refuses another host's request outright.
    const pinned = webBotAuthVerifier({ trustedIssuers: [server.issuer], authorities: ['other.example'] });
    expect(refusal(await pinned.verify(signed))).toBe('wrong_authority');
    // A signature changed in one bit.
    const tampered = new Headers(signed.headers);
    tampered.set(
      'signature',
      signed.headers.get('signature')!.replace(/:(.)/, (_, c: string) => `:${c === 'A' ? 'B' : 'A'}`),
    );
    expect(refusal(await kit.verify(new Request(SITE, { headers: tampered })))).toBe('bad_signature');
  });

  it('fetches keys only from trusted directories', async () => {
    const agent = await signingAgent();
    fetched.length = 0;
    const signed = await signRequest(new Request(SITE), agent.privateKey, { issuer: 'https://evil.example' });
    expect(await kit.verify(signed)).toMatchObject({ ok: false, reason: 'untrusted_directory' });
    expect(fetched).toEqual([]);
    // A directory elsewhere that lists the key is no help either.
    const elsewhere = webBotAuthVerifier({ trustedIssuers: ['http://127.0.0.1:9'] });
    expect(refusal(await elsewhere.verify(await signRequest(new Request(SITE), agent.privateKey, { issuer: server.issuer })))).toBe(
      'untrusted_directory',
    );
  });

  it('refuses the key of a deactivated agent once the directory’s max-age has passed, and the kill switch within that bound', async () => {
    const agent = await signingAgent();
    const sign = () => signRequest(new Request(SITE), agent.privateKey, { issuer: server.issuer });
    expect(refusal(await kit.verify(await sign()))).toBe('accepted');
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false });
    await sleep(MAX_AGE * 1000 + 100);
    expect(refusal(await kit.verify(await sign()))).toBe('unknown_key');
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: true });
    expect(refusal(await kit.verify(await sign()))).toBe('accepted');

    // A website that read the directory before a deactivation but asks who holds the key after it.
    const other = await signingAgent();
    const website = webBotAuthVerifier({ trustedIssuers: [server.issuer] });
    expect(refusal(await website.verify(await signRequest(new Request(SITE), other.privateKey, { issuer: server.issuer })))).toBe('accepted');
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false });
    expect(refusal(await website.verify(await sign()))).toBe('agent_inactive');
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: true });

    // The kill switch for the agent's owner: its next signed request fails within SIGNING_KEYS_MAX_AGE_SECONDS.
    await server.adminCall('POST', '/admin/users/revoke-grants', { email: agent.email });
    const pulled = Date.now();
    while (refusal(await kit.verify(await sign())) === 'accepted') await sleep(50);
    const took = Date.now() - pulled;
    expect(took).toBeLessThanOrEqual(MAX_AGE * 1000 + 500);
    expect(refusal(await kit.verify(await sign()))).toBe('unknown_key');
  });

  it('the example website shows "Signed by agent X (owner verified)" on a page an agent fetches signed', async () => {
    // The owner proves their email with the link agent-auth mails them.
    const page = await server.app.inject({ url: await mailedLink(server.app, smtp, 'shopper@example.com') });
    const headers = { cookie: cookiesOf(page), origin: server.issuer };
    expect((await server.app.inject({ method: 'POST', url: '/account/email-link/callback', headers, payload: linkForm(page.body) })).statusCode).toBe(
      303,
    );
    const agentId = (await server.adminCall('POST', '/admin/agents', { email: 'shopper@example.com', name: 'Errand runner' })).json.agent_id;
    const key = ed25519();
    expect((await server.adminCall('POST', `/admin/agents/${agentId}/signing-keys`, { jwk: key.jwk })).statusCode).toBe(201);
    const client = await server.createClient();
    const site = await startWebsite({ issuer: server.issuer, clientId: client.client_id, clientSecret: client.client_secret });
    try {
      const agentFetch = await signedFetch(key.privateKey, { issuer: server.issuer });
      const html = await (await agentFetch(`${site.url}/signed`)).text();
      expect(html).toContain('<p id="signed-by">Signed by agent <strong>Errand runner</strong> (owner verified)</p>');
      expect(html).toContain(agentId);
      expect(await (await fetch(`${site.url}/signed`)).text()).toContain('Not signed by an agent (missing_signature).');
    } finally {
      await site.close();
    }
  });
});
