import { spawn } from 'node:child_process';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFetchWebsite } from '../examples/fetch-website/server.js';
import { storeName } from './helpers/database.js';
import { startAuthorize } from './helpers/flow.js';
import { freePort, type ListeningServer, startListeningServer } from './helpers/listening.js';
import { finished, repoRoot } from './helpers/process.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from './helpers/server.js';

/** Both listeners on real sockets: the Python tests register their own websites and agents. */
async function serve(env: Record<string, string> = {}) {
  const server = await startListeningServer(env);
  const adminUrl = await server.admin.listen({ port: 0, host: '127.0.0.1' });
  return { server, addresses: { url: server.issuer, admin_url: adminUrl } };
}

/** Runs Python (python3, or $PYTHON to try another version) with a clean environment plus `env`. */
function runPython(args: string[], env: Record<string, string>) {
  const child = spawn(process.env.PYTHON ?? 'python3', args, {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return finished(child);
}

describe(`the Python agent SDK against real servers (${storeName})`, () => {
  const servers: ListeningServer[] = [];
  let addresses: Record<string, unknown>;

  beforeAll(async () => {
    const main = await serve();
    // Tiny budgets in a short window, for the rate-limit tests.
    const limited = await serve({ RATE_LIMIT_WINDOW_SECONDS: '2', RATE_LIMIT_AUTHENTICATE_PER_AGENT: '2', RATE_LIMIT_CHECK_STATUS_PER_IP: '3' });
    // Sign-ins that expire after a second, for the expiry tests.
    const short = await serve({ AUTH_REQUEST_TTL_SECONDS: '1' });
    servers.push(main.server, limited.server, short.server);
    addresses = { main: main.addresses, limited: limited.addresses, short: short.addresses, admin_token: ADMIN_TOKEN };
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  it('passes python3 -m unittest (sdk/python/tests), skipping nothing', { timeout: 180_000 }, async () => {
    const run = await runPython(['-m', 'unittest', 'discover', '-s', 'sdk/python/tests', '-t', 'sdk/python', '-v'], {
      AGENT_AUTH_TEST_SERVERS: JSON.stringify(addresses),
    });
    const summary = run.stderr.split('\n').filter((line) => /^(Ran \d+|OK|FAILED)/.test(line));
    expect({ code: run.code, summary }, run.stderr).toEqual({ code: 0, summary: [expect.stringMatching(/^Ran \d+ tests/), 'OK'] });
  });
});

/**
 * Agents written for the original Auth Agent (its Python SDK and browser-use tool) find the request
 * id with a pattern over the page's HTML, or by evaluating `window.authRequest.request_id`.
 */
describe(`agents written for the original Auth Agent find our request id (${storeName})`, () => {
  let server: TestServer;
  let page: { html: string; requestId: string };
  beforeAll(async () => {
    server = await startTestServer();
    const { res, requestId } = await startAuthorize(server, await server.createClient());
    page = { html: res.body, requestId };
  });
  afterAll(() => server.close());

  it("with their pattern over the page's HTML", () => {
    expect(/request_id:\s*['"]([^'"]+)['"]/.exec(page.html)?.[1]).toBe(page.requestId);
  });

  it("by evaluating window.authRequest.request_id after the page's own script ran", () => {
    const script = [...page.html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script>/g)]
      .map((m) => m[1])
      .find((body) => body.includes('window.authRequest'));
    // The page's script in a bare JavaScript context: just enough of a browser for it to start.
    const window: Record<string, unknown> = { location: { replace() {} } };
    runInNewContext(script!, {
      window,
      document: { getElementById: () => ({}), querySelector: () => null },
      fetch: () => new Promise(() => {}),
      setTimeout,
      encodeURIComponent,
      Date,
    });
    expect((window.authRequest as { request_id: string }).request_id).toBe(page.requestId);
  });
});

describe(`examples/python (${storeName})`, () => {
  it('sign_in_urllib.py signs an agent in to the fetch example website with urllib alone', { timeout: 60_000 }, async () => {
    const server = await startListeningServer();
    const port = await freePort();
    const client = await server.createClient([`http://127.0.0.1:${port}/callback`]);
    const website = await startFetchWebsite({ issuer: server.issuer, clientId: client.client_id, clientSecret: client.client_secret, port });
    try {
      const agent = await server.createAgent('alice@example.com');
      const run = await runPython(['examples/python/sign_in_urllib.py'], {
        PYTHONPATH: 'sdk/python',
        AGENT_AUTH_URL: server.issuer,
        AGENT_ID: agent.agent_id,
        AGENT_SECRET: agent.agent_secret,
        START_URL: `${website.url}/login`,
      });
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout).toContain(`authenticated for Shop (${website.url})`);
      expect(run.stdout).toContain(`landed on ${website.url}/`);
      expect(run.stdout).toContain(`Signed in as alice@example.com Agent id: ${agent.agent_id}`);
    } finally {
      await website.close();
      await server.close();
    }
  });

  it('browser_use_agent.py, which cannot run here (no browser-use), at least compiles', async () => {
    const run = await runPython(['-c', 'import ast, sys; ast.parse(open(sys.argv[1]).read())', 'examples/python/browser_use_agent.py'], {});
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  });
});
