import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName, usingPostgres } from '../helpers/database.js';
import { agentAuthenticate, setRequestExpiry, startAuthorize } from '../helpers/flow.js';
import { startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';

function longPoll(server: TestServer, requestId: string, wait: number, lastStatus?: string) {
  const last = lastStatus === undefined ? '' : `&last_status=${lastStatus}`;
  return server.app.inject({ url: `/api/check-status?request_id=${encodeURIComponent(requestId)}&wait=${wait}${last}` });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe(`check-status long poll (${storeName})`, () => {
  let server: TestServer;
  let other: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
    other = await startSecondInstance(server);
  });
  afterAll(async () => {
    await other.close();
    await server.close();
  });

  async function pendingRequest() {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const { requestId } = await startAuthorize(server, client);
    return { requestId, agent };
  }

  it('answers as soon as the agent authenticates, not when the wait is up', async () => {
    const { requestId, agent } = await pendingRequest();
    const started = Date.now();
    const poll = longPoll(server, requestId, 20);
    await sleep(300);
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    const res = await poll;
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'authenticated' });
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it(`is woken by a change made on another instance (${usingPostgres ? 'PostgreSQL LISTEN/NOTIFY' : 'one embedded store, in process'})`, async () => {
    const { requestId, agent } = await pendingRequest();
    const started = Date.now();
    const poll = longPoll(server, requestId, 20);
    await sleep(300);
    await agentAuthenticate(other, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect((await poll).json()).toEqual({ status: 'authenticated' });
    expect(Date.now() - started).toBeLessThan(4000);
  });

  async function authenticatedRequest() {
    const { requestId, agent } = await pendingRequest();
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    return requestId;
  }

  it('answers at once when the status is no longer the last_status the caller saw', async () => {
    const requestId = await authenticatedRequest();
    const started = Date.now();
    const res = await longPoll(server, requestId, 20, 'pending');
    expect(res.json()).toEqual({ status: 'authenticated' });
    expect(Date.now() - started).toBeLessThan(4000);
  });

  it('holds the answer while the status is still the last_status the caller saw', async () => {
    const requestId = await authenticatedRequest();
    const started = Date.now();
    const res = await longPoll(server, requestId, 1, 'authenticated');
    expect(res.json()).toEqual({ status: 'authenticated' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const bad = await longPoll(server, requestId, 1, 'done');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toBe('invalid_request');
  });

  it('answers with the unchanged state when the wait is up', async () => {
    const { requestId } = await pendingRequest();
    const started = Date.now();
    const res = await longPoll(server, requestId, 1);
    expect(res.json()).toEqual({ status: 'pending' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('answers request_expired when the request expires during the wait', async () => {
    const { requestId } = await pendingRequest();
    await setRequestExpiry(server, requestId, 2);
    const res = await longPoll(server, requestId, 20);
    expect(res.json()).toEqual({ status: 'error', error: 'request_expired', error_description: 'the authorization request has expired' });
  });

  it('answers at once for an unknown request, and refuses a wait over 25 seconds', async () => {
    expect((await longPoll(server, 'req_unknown', 20)).statusCode).toBe(404);
    const res = await longPoll(server, 'req_unknown', 26);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
  });
});
