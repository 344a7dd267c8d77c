import pg from 'pg';

const RECONNECT_DELAY_MS = 1000;

/**
 * One dedicated connection (outside the pool) that LISTENs for the whole process. When it is
 * lost it reconnects and listens again; what was notified in between is lost, which is why
 * listeners must not depend on every message arriving.
 */
export function createPgListener(connectionString: string) {
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let closed = false;

  const quote = (channel: string) => `"${channel.replace(/"/g, '""')}"`;

  function connect(): Promise<pg.Client> {
    connecting ??= (async () => {
      const c = new pg.Client({ connectionString, connectionTimeoutMillis: 5000 });
      c.on('notification', (msg) => {
        for (const handler of handlers.get(msg.channel) ?? []) handler(msg.payload ?? '');
      });
      c.on('error', () => lost(c));
      c.on('end', () => lost(c));
      await c.connect();
      for (const channel of handlers.keys()) await c.query(`LISTEN ${quote(channel)}`);
      client = c;
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
    c.end().catch(() => {});
    reconnectLater();
  }

  return {
    async listen(channel: string, onPayload: (payload: string) => void) {
      const set = handlers.get(channel) ?? new Set();
      const first = set.size === 0;
      set.add(onPayload);
      handlers.set(channel, set);
      if (client) {
        if (first) await client.query(`LISTEN ${quote(channel)}`).catch(() => {});
      } else {
        // Connecting LISTENs on every channel; if the database is down, keep trying in the background.
        await connect().catch(reconnectLater);
      }
      return async () => {
        set.delete(onPayload);
      };
    },
    async close() {
      closed = true;
      await client?.end().catch(() => {});
      client = undefined;
    },
  };
}
