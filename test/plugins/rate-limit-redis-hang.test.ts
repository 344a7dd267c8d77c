import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../../src/logger.js';
import { introspect, revoke } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, checkStatus, startAuthorize } from '../helpers/flow.js';
import { freePort } from '../helpers/listening.js';
import { within } from '../helpers/poll.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** A redis-server of our own, so that the test may stop it (SIGSTOP) without disturbing anyone. */
async function startRedis(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => output.includes('Ready to accept connections') && resolve());
    child.on('exit', () => reject(new Error(`redis-server exited: ${output}`)));
  });
  await ready;
  return { child, url: `redis://127.0.0.1:${port}` };
}

/** Runs `call` and returns how long it took, in ms. */
async function timed<T>(call: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const start = performance.now();
  const result = await call();
  return { ms: performance.now() - start, result };
}

describe(`a hung Redis does not hold rate-limited requests (${storeName})`, () => {
  let redis: { child: ChildProcess; url: string };
  let server: TestServer;
  let log = '';
  beforeAll(async () => {
    redis = await startRedis();
    const sink = new Writable({
      write(chunk, _encoding, done) {
        log += chunk.toString();
        done();
      },
    });
    server = await startTestServer(
      {
        REDIS_URL: redis.url,
        RATE_LIMIT_AUTHORIZE_PER_IP: '1000',
        RATE_LIMIT_CHECK_STATUS_PER_IP: '1000',
        RATE_LIMIT_AUTHENTICATE_PER_IP: '1000',
        RATE_LIMIT_CLIENT_FAILURES_PER_IP: '1000',
        RATE_LIMIT_CLIENT_PER_CLIENT: '1000',
      },
      { logger: pino(loggerOptions('info') as pino.LoggerOptions, sink) },
    );
  });
  afterAll(async () => {
    await server?.close();
    if (redis && redis.child.exitCode === null) {
      redis.child.kill('SIGCONT');
      redis.child.kill('SIGKILL');
      await once(redis.child, 'exit');
    }
  });

  const degraded = async () => {
    const metrics = (await server.admin.inject({ url: '/metrics' })).body;
    return /^agent_auth_rate_limit_store_degraded (\d)$/m.exec(metrics)?.[1];
  };
  const wrongSecret = (client: { client_id: string }) =>
    server.app.inject({
      method: 'POST',
      url: '/token',
      payload: { grant_type: 'refresh_token', refresh_token: 'aa_rt_x', client_id: client.client_id, client_secret: 'wrong' },
    });

  it('answers every rate-limited endpoint within a few hundred ms while Redis is stopped, says so, and recovers', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const credentials = { client_id: client.client_id, client_secret: client.client_secret };
    expect((await wrongSecret(client)).statusCode).toBe(401);
    expect(await degraded()).toBe('0');

    redis.child.kill('SIGSTOP');
    const calls: [string, () => Promise<{ statusCode: number }>, number][] = [
      ['/authorize', async () => (await startAuthorize(server, client)).res, 200],
      ['/token', () => wrongSecret(client), 401],
      ['/introspect', () => introspect(server, credentials, 'x'), 200],
      ['/revoke', () => revoke(server, credentials, 'x'), 200],
      [
        '/api/agent/authenticate',
        () => agentAuthenticate(server, { request_id: 'req_unknown', agent_id: agent.agent_id, agent_secret: 'wrong' }),
        401,
      ],
      ['/api/check-status', () => checkStatus(server, 'req_unknown'), 404],
    ];
    for (let round = 0; round < 3; round++) {
      for (const [name, call, status] of calls) {
        const { ms, result } = await timed(call);
        expect(result.statusCode, name).toBe(status);
        // Today's bound is the command timeout (300 ms); before, a request waited as long as Redis hung.
        expect(ms, name).toBeLessThan(3000);
      }
    }
    expect(await degraded()).toBe('1');
    // One warning for the whole run of failures, not one per request.
    const warnings = log.split('\n').filter((line) => line.includes('rate-limit store unavailable'));
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(warnings.length).toBeLessThanOrEqual(2);

    redis.child.kill('SIGCONT');
    // The store is asked again a second after the last failure; the first answer clears the gauge.
    const recovered = async () => {
      if ((await degraded()) === '0') return true;
      await wrongSecret(client);
      return false;
    };
    expect(await within(15_000, recovered, 200)).toBe(true);
    expect(await degraded()).toBe('0');
    expect(log).toContain('rate-limit store answers again');
  });
});
