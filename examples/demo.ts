/**
 * `npm run demo`: the whole "Sign in with agent" story on one machine. Starts agent-auth on the
 * embedded in-memory store, registers a website and an agent through the admin API, starts the
 * example website, lets the example agent sign in with a real Chromium, prints the email the
 * website received, and shuts everything down.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { CHROMIUM_PATH, runAgent } from './agent/agent.js';
import { startWebsite } from './website/server.js';

const USER_EMAIL = 'alice@example.com';

/** A port free a moment ago: the issuer and the redirect URI must be known before their servers start. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Why the demo cannot run here, before anything starts; undefined when it can. */
function missingBrowser(path = CHROMIUM_PATH): string | undefined {
  if (existsSync(path)) return undefined;
  return `npm run demo drives Chromium, and there is none at ${path}: apt-get install -y chromium (Debian), or set CHROMIUM_PATH to a Chromium binary`;
}

export async function main(log: (line: string) => void = console.log): Promise<string> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const adminToken = randomBytes(24).toString('base64url');
  const server = await startServer(
    loadConfig({
      DATA_DIR: 'memory',
      HOST: '127.0.0.1',
      PORT: String(port),
      ISSUER: issuer,
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: '0',
      ADMIN_TOKEN: adminToken,
      LOG_LEVEL: 'warn',
    }),
  );
  try {
    log(`agent-auth running at ${issuer} (admin API at ${server.adminUrl})`);
    async function register(path: string, body: object) {
      const res = await fetch(`${server.adminUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status !== 201) throw new Error(`POST ${path} failed: ${res.status} ${await res.text()}`);
      return res.json();
    }

    const websiteUrl = `http://127.0.0.1:${await freePort()}`;
    const client = await register('/admin/clients', { name: 'Example shop', redirect_uris: [`${websiteUrl}/callback`] });
    const agent = await register('/admin/agents', { email: USER_EMAIL, name: "Alice's agent" });
    log(`registered website ${client.client_id} and agent ${agent.agent_id} (for ${USER_EMAIL})`);

    const website = await startWebsite({
      issuer,
      clientId: client.client_id,
      clientSecret: client.client_secret,
      port: Number(new URL(websiteUrl).port),
    });
    try {
      log(`website running at ${website.url}; the agent opens it in Chromium and signs in…`);
      const email = await runAgent({
        websiteUrl: website.url,
        baseUrl: issuer,
        agentId: agent.agent_id,
        agentSecret: agent.agent_secret,
        model: 'demo-model',
      });
      log(`the website shows: signed in as ${email}`);
      return email;
    } finally {
      await website.close();
    }
  } finally {
    await server.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const missing = missingBrowser();
  if (missing) {
    console.error(`demo: ${missing}`);
    process.exit(1);
  }
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
