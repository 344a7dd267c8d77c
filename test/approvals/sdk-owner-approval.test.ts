import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessDeniedError, AgentAuthClient, OwnerDeniedError, type WaitStatus } from '../../sdk/typescript/src/index.js';
import { storeName } from '../helpers/database.js';
import { completeInBrowser, startAuthorize } from '../helpers/flow.js';
import { signInOwner } from '../helpers/owner.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';

describe(`the TypeScript SDK waits through the owner's approval (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  let baseUrl: string;
  beforeAll(async () => {
    smtp = await startSmtp();
    server = await startTestServer({ SMTP_URL: smtp.url, RATE_LIMIT_EMAIL_LINK_PER_IP: '1000', RATE_LIMIT_EMAIL_LINK_PER_EMAIL: '1000' });
    baseUrl = await server.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    await server?.close();
    await smtp?.close();
  });

  /** An agent whose owner approves every sign-in, a browser's sign-in for it, and the SDK's signIn under way. */
  async function signInAwaitingOwner() {
    const email = `owner-${Math.random().toString(36).slice(2)}@example.com`;
    const agent = await server.createAgent(email);
    const owner = await signInOwner(server.app, smtp, email);
    expect((await owner.call('PATCH', '/account/api/me', { approval_policy: 'always' })).statusCode).toBe(200);
    const started = await startAuthorize(server, await server.createClient());
    const sdk = new AgentAuthClient({ baseUrl, agentId: agent.agent_id, agentSecret: agent.agent_secret, model: 'test-model-1' });
    const seen: WaitStatus[] = [];
    const page = { content: async () => `<meta name="request-id" content="${started.requestId}">` };
    // A short timeoutMs: only the approval's own (longer) wait keeps the SDK waiting for the owner.
    const signingIn = sdk.signIn(page, { until: 'authenticated', timeoutMs: 500, approvalTimeoutMs: 20_000, onStatus: (s) => seen.push(s) });
    signingIn.catch(() => undefined);
    await expect.poll(() => seen, { timeout: 10_000 }).toContain('waiting_for_owner_approval');
    // Still waiting past timeoutMs.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const decide = async (decision: 'approve' | 'deny') =>
      expect((await owner.call('POST', `/account/api/approvals/${started.requestId}`, { decision })).statusCode).toBe(200);
    return { started, signingIn, seen, decide };
  }

  it('signIn reports waiting_for_owner_approval, keeps waiting, and resolves once the owner approves', async () => {
    const { started, signingIn, seen, decide } = await signInAwaitingOwner();
    await decide('approve');
    expect(await signingIn).toEqual({ requestId: started.requestId, status: 'authenticated', approval: 'approved' });
    expect(seen).toEqual(['waiting_for_owner_approval', 'authenticated']);
    expect((await completeInBrowser(server, started.requestId, started.cookie)).code).toBeDefined();
  });

  it('a denial by the owner rejects with OwnerDeniedError, still an AccessDeniedError', async () => {
    const { signingIn, decide } = await signInAwaitingOwner();
    await decide('deny');
    const err = await signingIn.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OwnerDeniedError);
    expect(err).toBeInstanceOf(AccessDeniedError);
    expect(err).toMatchObject({ code: 'access_denied' });
  });

  /** A sign-in the agent has authenticated, waiting for its owner (policy always), without the SDK having polled it yet. */
  async function authenticatedAwaitingOwner() {
    const email = `owner-${Math.random().toString(36).slice(2)}@example.com`;
    const agent = await server.createAgent(email);
    const owner = await signInOwner(server.app, smtp, email);
    expect((await owner.call('PATCH', '/account/api/me', { approval_policy: 'always' })).statusCode).toBe(200);
    const started = await startAuthorize(server, await server.createClient());
    const sdk = new AgentAuthClient({ baseUrl, agentId: agent.agent_id, agentSecret: agent.agent_secret, model: 'test-model-1' });
    expect(await sdk.authenticate(started.requestId)).toMatchObject({ approval: 'pending' });
    return { sdk, owner, requestId: started.requestId };
  }

  it('the owner denying before the agent’s first check-status is still OwnerDeniedError: the answer says so', async () => {
    const { sdk, owner, requestId } = await authenticatedAwaitingOwner();
    expect((await owner.call('POST', `/account/api/approvals/${requestId}`, { decision: 'deny' })).statusCode).toBe(200);
    const err = await sdk.waitForCompletion(requestId, { timeoutMs: 5000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OwnerDeniedError);
    expect(err).toMatchObject({ code: 'access_denied', description: "the agent's owner denied this sign-in" });
  });

  it('a kill switch while the owner’s approval is pending is an AccessDeniedError, not the owner’s denial', async () => {
    const { sdk, owner, requestId } = await authenticatedAwaitingOwner();
    const seen: WaitStatus[] = [];
    const waiting = sdk.waitForCompletion(requestId, { timeoutMs: 500, approvalTimeoutMs: 20_000, onStatus: (s) => seen.push(s) });
    waiting.catch(() => undefined);
    await expect.poll(() => seen, { timeout: 10_000 }).toContain('waiting_for_owner_approval');
    expect((await owner.call('POST', '/account/api/revoke-all')).statusCode).toBe(204);
    const err = await waiting.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AccessDeniedError);
    expect(err).not.toBeInstanceOf(OwnerDeniedError);
  });
});
