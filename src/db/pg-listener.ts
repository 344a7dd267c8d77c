import { Socket } from 'node:net';
import pg from 'pg';
import type { ListenOptions } from './types.js';

const RECONNECT_DELAY_MS = 1000;
/**
 * A path that drops an idle connection without a FIN or RST (a NAT, firewall or load balancer
 * idle timeout) leaves both ends believing it is up, and notifications stop arriving unseen. So the
 * listening connection proves itself every HEARTBEAT_INTERVAL_MS with a round trip; an answer not
 * back within HEARTBEAT_TIMEOUT_MS counts as a lost connection (docs/operations.md, "Grant cache").
 * A round trip answered also proves that every notification sent before it has arrived.
 */
export const HEARTBEAT_INTERVAL_MS = 2000;
export const HEARTBEAT_TIMEOUT_MS = 1500;
// Named, so that pg_stat_activity tells the listening connection apart.
const HEARTBEAT = 'SELECT 1 AS agent_auth_listener_heartbeat';

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
      // Our own socket, to cut it when the heartbeat goes unanswered: ending a connection politely
      // waits for a server that may never answer. TCP keepalive too, for the kernel's own view.
      const socket = new Socket();
      const c = new pg.Client({
        connectionString,
        connectionTimeoutMillis: 5000,
        keepAlive: true,
        keepAliveInitialDelayMillis: 1000,
        stream: () => socket,
      });
      c.on('notification', dispatch);
      c.on('error', () => lost(c));
      c.on('end', () => lost(c));
      await c.connect();
      for (const channel of handlers.keys()) await c.query(`LISTEN ${quote(channel)}`);
      client = c;
      heartbeat(c, socket);
      announce(true);
      return c;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  function heartbeat(c: pg.Client, socket: Socket) {
    const timer = setInterval(() => {
      if (client !== c) return clearInterval(timer);
      const late = setTimeout(() => socket.destroy(), HEARTBEAT_TIMEOUT_MS);
      c.query(HEARTBEAT).then(
        () => clearTimeout(late),
        () => socket.destroy(),
      );
    }, HEARTBEAT_INTERVAL_MS).unref();
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
