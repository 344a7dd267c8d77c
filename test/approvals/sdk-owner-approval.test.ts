import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessDeniedError, AgentAuthClient, OwnerDeniedError, type WaitStatus } from '../../sdk/typescript/src/index.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, checkStatus, completeInBrowser, startAuthorize } from '../helpers/flow.js';
import { signInOwner } from '../helpers/owner.js';
import { finished, repoRoot } from '../helpers/process.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';

/**
 * The Python SDK (sdk/python) against a real listening server while the agent's owner decides.
 * `sign_in` reads the request id off a page that shows it; `wait` only polls a sign-in authenticated
 * beforehand. It prints one JSON line: the result, or the error's class and its bases.
 */
const AGENT = `
import json, sys
from agent_auth import AgentAuthClient

mode, base_url, agent_id, secret, request_id = sys.argv[1:6]

class Page:
    url = base_url + "/authorize"

    def content(self):
        return '<meta name="request-id" content="%s">' % request_id

client = AgentAuthClient(base_url, agent_id, secret, "py-model-1")
try:
    if mode == "sign_in":
        # timeout=1: only approval_timeout keeps it waiting for the owner.
        result = client.sign_in(Page(), timeout=1, interval=0.2, until="authenticated", approval_timeout=30)
    else:
        result = client.wait_for_completion(request_id, timeout=5, interval=0.2)
    print(json.dumps({"result": result}))
except Exception as err:
    print(json.dumps({"error": [c.__name__ for c in type(err).__mro__], "code": getattr(err, "code", None), "description": str(err)}))
`;

describe(`the agent SDKs wait through the owner's approval, against a real server (${storeName})`, () => {
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

  /** An agent whose owner (freshly signed in by email link) approves every sign-in, and a browser's sign-in for it. */
  async function agentAwaitingOwner() {
    const email = `owner-${Math.random().toString(36).slice(2)}@example.com`;
    const agent = await server.createAgent(email);
    const owner = await signInOwner(server.app, smtp, email);
    expect((await owner.call('PATCH', '/account/api/me', { approval_policy: 'always' })).statusCode).toBe(200);
    const started = await startAuthorize(server, await server.createClient());
    const decide = async (decision: 'approve' | 'deny') =>
      expect((await owner.call('POST', `/account/api/approvals/${started.requestId}`, { decision })).statusCode).toBe(200);
    const sdk = new AgentAuthClient({ baseUrl, agentId: agent.agent_id, agentSecret: agent.agent_secret, model: 'test-model-1' });
    return { agent, owner, started, decide, sdk };
  }

  /** The TypeScript SDK's signIn under way, once it reports waiting for the owner (and a while after). */
  async function signInAwaitingOwner() {
    const { started, decide, sdk } = await agentAwaitingOwner();
    const seen: WaitStatus[] = [];
    const page = { content: async () => `<meta name="request-id" content="${started.requestId}">` };
    // A short timeoutMs: only the approval's own (longer) wait keeps the SDK waiting for the owner.
    const signingIn = sdk.signIn(page, { until: 'authenticated', timeoutMs: 500, approvalTimeoutMs: 20_000, onStatus: (s) => seen.push(s) });
    signingIn.catch(() => undefined);
    await expect.poll(() => seen, { timeout: 10_000 }).toContain('waiting_for_owner_approval');
    // Still waiting past timeoutMs.
    await new Promise((resolve) => setTimeout(resolve, 1000));
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

  /** A sign-in the agent has authenticated, waiting for its owner, without the SDK having polled it yet. */
  async function authenticatedAwaitingOwner() {
    const awaiting = await agentAwaitingOwner();
    expect(await awaiting.sdk.authenticate(awaiting.started.requestId)).toMatchObject({ approval: 'pending' });
    return { ...awaiting, requestId: awaiting.started.requestId };
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

  describe('Python (sdk/python)', () => {
    async function runAgent(mode: 'sign_in' | 'wait', agent: { agent_id: string; agent_secret: string }, requestId: string) {
      const child = spawn(process.env.PYTHON ?? 'python3', ['-c', AGENT, mode, baseUrl, agent.agent_id, agent.agent_secret, requestId], {
        cwd: repoRoot,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, PYTHONPATH: 'sdk/python', PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const run = await finished(child);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      return JSON.parse(run.stdout.trim());
    }

    /** Waits until the Python agent has authenticated and the sign-in waits for the owner, then a while more. */
    async function untilWaitingForOwner(requestId: string) {
      await expect
        .poll(async () => (await checkStatus(server, requestId)).json(), { timeout: 15_000, interval: 100 })
        .toEqual({ status: 'authenticated', approval: 'pending' });
      // Past the SDK's own timeout (1 s): still waiting, for the owner.
      await new Promise((resolve) => setTimeout(resolve, 1500));
    }

    it('sign_in waits past its timeout while approval is pending, and finishes once the owner approves', { timeout: 60_000 }, async () => {
      const { agent, started, decide } = await agentAwaitingOwner();
      const agentRun = runAgent('sign_in', agent, started.requestId);
      await untilWaitingForOwner(started.requestId);
      await decide('approve');
      const { result } = await agentRun;
      expect(result).toMatchObject({ request_id: started.requestId, status: 'authenticated', approval: 'approved' });
      expect((await completeInBrowser(server, started.requestId, started.cookie)).code).toBeDefined();
    });

    it('a denial by the owner raises OwnerDeniedError, an AccessDeniedError', { timeout: 60_000 }, async () => {
      const { agent, started, decide } = await agentAwaitingOwner();
      const agentRun = runAgent('sign_in', agent, started.requestId);
      await untilWaitingForOwner(started.requestId);
      await decide('deny');
      const { error, code } = await agentRun;
      expect(error.slice(0, 3)).toEqual(['OwnerDeniedError', 'AccessDeniedError', 'AgentAuthError']);
      expect(code).toBe('access_denied');
    });

    it('the owner denying before the agent’s first check-status is still OwnerDeniedError', { timeout: 60_000 }, async () => {
      const { agent, started, decide } = await agentAwaitingOwner();
      const auth = await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
      expect(auth.json().approval).toBe('pending');
      await decide('deny');
      const { error, description } = await runAgent('wait', agent, started.requestId);
      expect(error[0]).toBe('OwnerDeniedError');
      expect(description).toBe("access_denied: the agent's owner denied this sign-in");
    });
  });
});
