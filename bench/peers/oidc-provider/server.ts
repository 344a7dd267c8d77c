import { createServer } from 'node:http';
import { defaultOf } from '../../../src/config.js';
import { openDb } from '../../../src/db/index.js';
import { PEER_SCHEMA } from './adapter.js';
import { createPeerProvider } from './provider.js';

/**
 * The peer as its own process (so its memory is measured apart): PEER_PORT, and DATABASE_URL or
 * DATA_DIR, or PEER_ADAPTER=memory for its in-memory adapter (no database at all).
 */
const port = Number(process.env.PEER_PORT ?? 3100);
const db =
  process.env.PEER_ADAPTER === 'memory'
    ? undefined
    : await openDb({
        databaseUrl: process.env.DATABASE_URL,
        dataDir: process.env.DATA_DIR ?? 'memory',
        databaseTimeoutMs: defaultOf('DATABASE_TIMEOUT_MS'),
        dataDirMinFreeMb: defaultOf('DATA_DIR_MIN_FREE_MB'),
      });
await db?.exec(PEER_SCHEMA);
const provider = createPeerProvider(`http://127.0.0.1:${port}`, db);
const server = createServer(provider.callback()).listen(port, '127.0.0.1');

process.once('SIGTERM', () => {
  server.close(() => void (db?.close() ?? Promise.resolve()).then(() => process.exit(0)));
  server.closeAllConnections();
});
