import { execFileSync, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { finished, repoRoot } from '../helpers/process.js';

/**
 * The first Python interpreter (PYTHON, python3, then Debian's own) that imports Authlib and
 * requests-oauthlib: Debian's python3-authlib and python3-requests-oauthlib install into Debian's
 * Python, which another python3 first on PATH does not see.
 */
function pythonWithClients(): string | undefined {
  for (const python of [process.env.PYTHON, 'python3', '/usr/bin/python3']) {
    if (!python) continue;
    try {
      execFileSync(python, ['-c', 'import authlib, requests_oauthlib'], { stdio: 'ignore' });
      return python;
    } catch {
      // the next one
    }
  }
  console.warn('Authlib and requests-oauthlib: skipped, no python3 imports them (apt-get install -y python3-authlib python3-requests-oauthlib)');
  return undefined;
}

const python = pythonWithClients();

/**
 * docs/interop.md's rows for Authlib and requests-oauthlib: each library's default is refused for
 * want of PKCE (docs/protocol.md: S256 required), and with the one setting the row gives, it signs in
 * and reads /userinfo. The libraries are Debian 12's packages, run unmodified against the listening server.
 */
describe.runIf(python)(`Python's OAuth clients as Debian packages them (${storeName})`, () => {
  let server: ListeningServer;
  beforeAll(async () => {
    server = await startListeningServer();
  });
  afterAll(() => server?.close());

  it('Authlib and requests-oauthlib: refused without PKCE, signed in with it', { timeout: 120_000 }, async () => {
    const client = await server.createClient(['http://localhost:8080/callback']);
    const agent = await server.createAgent('python-clients@example.com');
    const child = spawn(python!, ['test/interop/python_clients.py'], {
      cwd: repoRoot,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PYTHONDONTWRITEBYTECODE: '1',
        // Plain http, which both refuse unless told: the server listens on loopback only.
        AUTHLIB_INSECURE_TRANSPORT: '1',
        OAUTHLIB_INSECURE_TRANSPORT: '1',
        ISSUER: server.issuer,
        CLIENT_ID: client.client_id,
        CLIENT_SECRET: client.client_secret,
        REDIRECT_URI: client.redirect_uris[0],
        AGENT_ID: agent.agent_id,
        AGENT_SECRET: agent.agent_secret,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run = await finished(child);
    expect(run.code, run.stderr).toBe(0);
    const results = JSON.parse(run.stdout);
    for (const library of ['authlib', 'requests-oauthlib']) {
      expect(results[library].default, library).toMatchObject({ status: 400, page: expect.stringContaining('code_challenge') });
      expect(results[library], library).toMatchObject({
        scope: 'openid email',
        userinfo: { sub: agent.agent_id, email: 'python-clients@example.com' },
      });
    }
  });
});
