import { createServer } from 'node:net';
import type { Env } from '../../src/config.js';
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
