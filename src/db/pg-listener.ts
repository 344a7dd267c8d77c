import pg from 'pg';
import type { ListenOptions } from './types.js';

const RECONNECT_DELAY_MS = 1000;

/**
 * One dedicated connection (outside the pool) that LISTENs for the whole process. When it is
 * lost it reconnects and listens again; what was notified in between is lost, which is why
 * listeners must not depend on every message arriving (or must hear `onStatus`).
 *
 * For `ownWritesFirst` channels every pool connection LISTENs too: PostgreSQL hands a session
 * its own notifications at commit, before the statement's answer, whereas the dedicated
 * connection hears them only a moment after.
 */
export function createPgListener(connectionString: string) {
  const handlers = new Map<string, Set<(payload: string) => void>>();
  const statusHandlers = new Set<(listening: boolean) => void>();
  const ownWriteChannels = new Set<string>();
  const poolClientsListening = new WeakMap<pg.PoolClient, number>();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;

  const quote = (channel: string) => `"${channel.replace(/"/g, '""')}"`;
  const dispatch = (msg: pg.Notification) => {
    for (const handler of handlers.get(msg.channel) ?? []) handler(msg.payload ?? '');
  };
  const announce = (listening: boolean) => {
    for (const onStatus of statusHandlers) onStatus(listening);
  };

  /**
   * Makes a pool connection LISTEN on the own-writes channels before it runs a statement; undefined
   * when it already does (the usual case). Awaited rather than queued: pg refuses to queue a second
   * query on a busy connection in its next major version.
   */
  function prepare(poolClient: pg.PoolClient): Promise<void> | undefined {
    const listening = poolClientsListening.get(poolClient);
    if (listening === ownWriteChannels.size || ownWriteChannels.size === 0) return undefined;
    if (listening === undefined) poolClient.on('notification', dispatch);
    poolClientsListening.set(poolClient, ownWriteChannels.size);
    const statements = [...ownWriteChannels].map((channel) => `LISTEN ${quote(channel)}`).join('; ');
    // A connection that fails here fails its statement next, which reports it.
    return poolClient.query(statements).then(
      () => {},
      () => {},
    );
  }

  function connect(): Promise<pg.Client> {
    connecting ??= (async () => {
      const c = new pg.Client({ connectionString, connectionTimeoutMillis: 5000 });
      c.on('notification', dispatch);
      c.on('error', () => lost(c));
      c.on('end', () => lost(c));
      await c.connect();
      for (const channel of handlers.keys()) await c.query(`LISTEN ${quote(channel)}`);
      client = c;
      announce(true);
      return c;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  function reconnectLater() {
    if (closed || handlers.size === 0) return;
    setTimeout(() => void connect().catch(reconnectLater), RECONNECT_DELAY_MS).unref();
  }

  function lost(c: pg.Client) {
    if (client !== c) return;
    client = undefined;
    announce(false);
    c.end().catch(() => {});
    reconnectLater();
  }

  return {
    prepare,
    async listen(channel: string, onPayload: (payload: string) => void, options: ListenOptions = {}) {
      const set = handlers.get(channel) ?? new Set();
      const first = set.size === 0;
      set.add(onPayload);
      handlers.set(channel, set);
      if (options.ownWritesFirst) ownWriteChannels.add(channel);
      if (options.onStatus) statusHandlers.add(options.onStatus);
      if (client) {
        const c = client;
        if (first) await c.query(`LISTEN ${quote(channel)}`).catch(() => lost(c));
        options.onStatus?.(client !== undefined);
      } else {
        // Connecting LISTENs on every channel; if the database is down, keep trying in the background.
        await connect().catch(reconnectLater);
      }
      return async () => {
        set.delete(onPayload);
        if (options.onStatus) statusHandlers.delete(options.onStatus);
      };
    },
    async close() {
      closed = true;
      await client?.end().catch(() => {});
      client = undefined;
    },
  };
}
