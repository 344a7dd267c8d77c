import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Env, loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { createTestDatabase, seedPgliteDir } from './database.js';
import { startTestServer, type TestServer } from './server.js';

// Ports the kernel hands out to outgoing connections (net.ipv4.ip_local_port_range) can be taken between
// the probe and the listen, by any connection of a busy test run; a port below that range cannot.
const FIRST_PORT = 20_000;
const PORTS = 12_000;

/** A port free now on every address, below the ephemeral range: the issuer must be known before the server is built. */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = FIRST_PORT + Math.floor(Math.random() * PORTS);
    const probe = createServer();
    const free = await new Promise<boolean>((resolve) => {
      probe.once('error', () => resolve(false));
      probe.listen(port, () => resolve(true));
    });
    if (free) {
      await new Promise((resolve) => probe.close(resolve));
      return port;
    }
  }
}

export interface ListeningServer extends TestServer {
  /** The listening URL, which is also the issuer. */
  issuer: string;
}

/** The test server on a real socket (for browsers and outside client libraries), ISSUER = its URL. */
export async function startListeningServer(env: Partial<Env> = {}): Promise<ListeningServer> {
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const server = await startTestServer({ ISSUER: issuer, ...env });
  await server.app.listen({ port, host: '127.0.0.1' });
  return { ...server, issuer };
}

/** A real server's settings: both listeners on free ports, quiet, over `databaseUrl` or the embedded store in `dataDir`. */
export function localConfig(dataDir: string, databaseUrl: string | undefined, env: Record<string, string> = {}) {
  return loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    ADMIN_HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'silent',
    ...env,
  });
}

/** A real server (both listeners on free ports) over a fresh store, with a data directory of its own. */
export async function startLocalServer(env: Record<string, string> = {}) {
  const database = await createTestDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'agent-auth-local-'));
  // The first start on an embedded store is test/startup.test.ts's subject; here it only costs time.
  if (!database.url && env.DATA_DIR === undefined) await seedPgliteDir(join(dataDir, 'pglite'));
  const server = await startServer(localConfig(dataDir, database.url, env));
  return {
    database,
    dataDir,
    server,
    async stop() {
      await server.close();
      await database.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
