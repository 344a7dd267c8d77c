import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { purgeExpired } from '../../src/jobs/purge.js';
import { loggerOptions } from '../../src/logger.js';
import { exchangeCode, postForm, refresh, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, checkStatus, completeInBrowser, setRequestExpiry, signInToCode, startAuthorize } from '../helpers/flow.js';
import { startLocalServer } from '../helpers/listening.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
function parseMetrics(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** The value of the one sample with this name whose labels include `labels`; 0 when there is none. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value ?? 0;
}

async function scrape(server: TestServer) {
  const res = await server.admin.inject({ url: '/metrics' });
  expect(res.statusCode).toBe(200);
  return { res, samples: parseMetrics(res.body) };
}

const signIns = (samples: Sample[], stage: string) => valueOf(samples, 'agent_auth_sign_ins_total', { stage });

describe(`GET /metrics on the admin listener (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_CHECK_STATUS_PER_IP: '2' });
  });
  afterAll(() => server.close());

  it('answers in Prometheus text format without the admin token, while /admin still needs it', async () => {
    const { res } = await scrape(server);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.body).toContain('# TYPE agent_auth_sign_ins_total counter');
    expect(res.body).toContain('# TYPE agent_auth_http_request_duration_seconds histogram');
    expect((await server.admin.inject({ url: '/admin/clients' })).statusCode).toBe(401);
    const withToken = await server.admin.inject({ url: '/admin/clients', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(withToken.statusCode).toBe(200);
    // the public listener does not serve it
    expect((await server.app.inject({ url: '/metrics' })).statusCode).toBe(404);
  });

  it('counts a sign-in, token grants by type, failures by code and route, and /authorize latency', async () => {
    const before = (await scrape(server)).samples;
    const { client, code, verifier, requestId } = await signInToCode(server);
    const tokens = await exchangeCode(server, client, code, verifier);
    expect(tokens.statusCode).toBe(200);
    expect((await refresh(server, client, tokens.json().refresh_token)).statusCode).toBe(200);
    // the code again: invalid_grant
    expect((await exchangeCode(server, client, code, verifier)).statusCode).toBe(400);
    expect((await userinfo(server, 'not-a-token')).statusCode).toBe(401);
    expect(
      (await postForm(server, '/token', { grant_type: 'password', client_id: client.client_id, client_secret: client.client_secret })).statusCode,
    ).toBe(400);

    const { res, samples } = await scrape(server);
    const delta = (name: string, labels: Record<string, string>) => valueOf(samples, name, labels) - valueOf(before, name, labels);
    expect(['started', 'authenticated', 'completed', 'denied', 'expired'].map((stage) => signIns(samples, stage) - signIns(before, stage))).toEqual([
      1, 1, 1, 0, 0,
    ]);
    expect(delta('agent_auth_token_grants_total', { grant_type: 'authorization_code' })).toBe(1);
    expect(delta('agent_auth_token_grants_total', { grant_type: 'refresh_token' })).toBe(1);
    expect(delta('agent_auth_failures_total', { error: 'invalid_grant', route: '/token' })).toBe(1);
    expect(delta('agent_auth_failures_total', { error: 'unsupported_grant_type', route: '/token' })).toBe(1);
    expect(delta('agent_auth_failures_total', { error: 'invalid_request', route: '/userinfo' })).toBe(1);

    const authorizeLatency = { method: 'GET', route: '/authorize', status_code: '200' };
    expect(delta('agent_auth_http_request_duration_seconds_count', authorizeLatency)).toBe(1);
    expect(delta('agent_auth_http_request_duration_seconds_bucket', { ...authorizeLatency, le: '+Inf' })).toBe(1);
    expect(res.body).toMatch(
      /^agent_auth_http_request_duration_seconds_bucket\{le="0\.005",method="GET",route="\/authorize",status_code="200"\} \d+$/m,
    );
    expect(
      valueOf(samples, 'agent_auth_http_request_duration_seconds_count', { method: 'GET', route: '/authorize/complete', status_code: '302' }),
    ).toBe(1);
    // labels are route patterns and codes: no request ids, client ids or secrets
    expect(res.body).not.toContain(requestId);
    expect(res.body).not.toContain(client.client_id);
  });

  it('counts an expired sign-in once however often it is reported, and rate-limit hits by limiter', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const { requestId } = await startAuthorize(server, client);
    await setRequestExpiry(server, requestId, -1);
    const before = (await scrape(server)).samples;

    const auth = await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(auth.json().error).toBe('request_expired');
    expect((await checkStatus(server, requestId)).json().error).toBe('request_expired');
    // the limit is 2 a window: the call above was the first from this address
    expect((await checkStatus(server, requestId)).statusCode).toBe(200);
    expect((await checkStatus(server, requestId)).statusCode).toBe(429);

    const { samples } = await scrape(server);
    expect(signIns(samples, 'expired') - signIns(before, 'expired')).toBe(1);
    expect(valueOf(samples, 'agent_auth_failures_total', { error: 'request_expired', route: '/api/agent/authenticate' })).toBe(1);
    expect(valueOf(samples, 'agent_auth_rate_limit_hits_total', { limiter: 'check-status-ip' })).toBe(1);
    expect(valueOf(samples, 'agent_auth_failures_total', { error: 'rate_limited', route: '/api/check-status' })).toBe(1);
    expect(valueOf(samples, 'agent_auth_http_request_duration_seconds_count', { route: '/api/check-status', status_code: '429' })).toBe(1);
  });

  it('counts the sign-ins whose expiry the purge job records', async () => {
    const client = await server.createClient();
    const { requestId } = await startAuthorize(server, client);
    await setRequestExpiry(server, requestId, -7200);
    const before = (await scrape(server)).samples;
    await purgeExpired(server.services, { auditRetentionDays: 365, auditRetentionWithoutAgentDays: 365, log: server.app.log });
    expect(signIns((await scrape(server)).samples, 'expired') - signIns(before, 'expired')).toBe(1);
  });

  it('labels unknown paths "unmatched" instead of their URL', async () => {
    const notFound = { error: 'not_found', route: 'unmatched' };
    const before = valueOf((await scrape(server)).samples, 'agent_auth_failures_total', notFound);
    const path = `/no-such-page-${Date.now()}`;
    expect((await server.app.inject({ url: path })).statusCode).toBe(404);
    const { res, samples } = await scrape(server);
    expect(res.body).not.toContain(path);
    expect(valueOf(samples, 'agent_auth_failures_total', notFound) - before).toBe(1);
  });

  it('keeps one registry per set of services', async () => {
    const other = await startTestServer();
    try {
      await startAuthorize(other, await other.createClient());
      expect(signIns((await scrape(other)).samples, 'started')).toBe(1);
      expect(signIns((await scrape(server)).samples, 'started')).toBeGreaterThan(1);
    } finally {
      await other.close();
    }
  });
});

describe(`the running server (${storeName})`, () => {
  it('serves /metrics over HTTP on the admin listener, with the process metrics, to a scraper without a token', async () => {
    const local = await startLocalServer({ ADMIN_TOKEN });
    const { server } = local;
    try {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
      const res = await fetch(`${server.adminUrl}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toBeTruthy();
      const samples = parseMetrics(await res.text());
      expect(valueOf(samples, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      expect(valueOf(samples, 'agent_auth_http_request_duration_seconds_count', { route: '/healthz', status_code: '200' })).toBe(1);
    } finally {
      await local.stop();
    }
  });
});

describe(`denied sign-ins (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ REQUIRE_APPROVAL: 'true' });
  });
  afterAll(() => server.close());

  it('counts Deny on the approval page', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const { requestId, cookie } = await startAuthorize(server, client);
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    const page = await completeInBrowser(server, requestId, cookie);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.res.body)?.[1] ?? '';
    const res = await server.app.inject({
      method: 'POST',
      url: '/authorize/decision',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie! },
      payload: new URLSearchParams({ request_id: requestId, csrf_token: csrf, decision: 'deny' }).toString(),
    });
    expect(res.statusCode).toBe(303);
    const { samples } = await scrape(server);
    expect(signIns(samples, 'denied')).toBe(1);
    expect(signIns(samples, 'completed')).toBe(0);
  });
});

describe(`request ids (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

  it('echoes a fresh id in x-request-id on every response, errors and the admin listener included', async () => {
    const first = await server.app.inject({ url: '/healthz' });
    const second = await server.app.inject({ url: '/api/check-status' });
    expect(second.statusCode).toBe(400);
    const admin = await server.admin.inject({ url: '/admin/clients' });
    expect(admin.statusCode).toBe(401);
    const ids = [first, second, admin].map((res) => res.headers['x-request-id']);
    for (const id of ids) expect(id).toMatch(UUID);
    expect(new Set(ids).size).toBe(3);
  });

  it("keeps a caller's x-request-id when it looks like an id, and replaces anything else", async () => {
    const kept = await server.app.inject({ url: '/healthz', headers: { 'x-request-id': 'lb-7f3a:42' } });
    expect(kept.headers['x-request-id']).toBe('lb-7f3a:42');
    for (const given of ['two words', 'x'.repeat(129), '<script>']) {
      const res = await server.app.inject({ url: '/healthz', headers: { 'x-request-id': given } });
      expect(res.headers['x-request-id']).toMatch(UUID);
    }
  });

  it('logs every request once, as JSON, with the id it echoes: method, path, address, status and time', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const logger = pino(loggerOptions('info') as pino.LoggerOptions, sink);
    const app = await buildApp(server.services, { loggerInstance: logger });
    try {
      const res = await app.inject({ url: '/api/check-status?request_id=req_unknown', headers: { 'x-request-id': 'trace-0001' } });
      expect(res.statusCode).toBe(404);
      const generated = await app.inject({ url: '/healthz' });
      const records = lines.map((line) => JSON.parse(line) as { reqId?: string; msg: string; req?: { path: string }; res?: { statusCode: number } });
      const traced = records.filter((r) => r.reqId === 'trace-0001');
      expect(traced).toEqual([
        expect.objectContaining({
          msg: 'request completed',
          req: { method: 'GET', path: '/api/check-status', remoteAddress: '127.0.0.1' },
          res: { statusCode: 404 },
          responseTime: expect.any(Number),
        }),
      ]);
      expect(records.filter((r) => r.reqId === generated.headers['x-request-id'])).toHaveLength(1);
      // the query (a request id of the flow) stays out of the logs, and so do a request's credentials
      await app.inject({ url: '/userinfo', headers: { authorization: 'Bearer secret-in-a-header', cookie: 'session=secret-in-a-cookie' } });
      expect(lines.join('\n')).not.toMatch(/req_unknown|secret-in-a/);
    } finally {
      await app.close();
    }
  });
});
