import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Env, loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { createTestDatabase, seedPgliteDir } from './database.js';
import { startTestServer, type TestServer } from './server.js';

/** A port that was free a moment ago: the issuer must be known before the server is built. */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
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
