import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that a test can stop (connections refused), black-hole
 * (connections accepted, nothing forwarded) and start again on the same port.
 */
export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1') {
  const sockets = new Set<net.Socket>();
  let blackHole = false;
  let server: net.Server | undefined;
  let port = 0;

  function listen(): Promise<void> {
    if (server?.listening) return Promise.resolve();
    server = net.createServer((client) => {
      sockets.add(client);
      client.on('close', () => sockets.delete(client));
      client.on('error', () => client.destroy());
      if (blackHole) return;
      const upstream = net.connect(targetPort, targetHost);
      sockets.add(upstream);
      upstream.on('close', () => sockets.delete(upstream));
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.pipe(upstream);
      upstream.pipe(client);
    });
    return new Promise((resolve) =>
      server!.listen(port, '127.0.0.1', () => {
        port = (server!.address() as net.AddressInfo).port;
        resolve();
      }),
    );
  }

  function dropConnections() {
    for (const s of sockets) s.destroy();
    sockets.clear();
  }

  await listen();
  return {
    get port() {
      return port;
    },
    /** Refuse new connections and cut the open ones. */
    async stop() {
      dropConnections();
      await new Promise<void>((resolve) => server!.close(() => resolve()));
    },
    start: listen,
    /** Accept connections but forward nothing, and freeze the open ones: a hung database. */
    freeze() {
      blackHole = true;
      for (const s of sockets) s.pause();
    },
    /**
     * Stop forwarding on the open connections without closing them, as a NAT or firewall that
     * forgets an idle connection does (no FIN, no RST); new connections pass.
     */
    forgetOpen() {
      for (const s of sockets) s.pause();
    },
    async thaw() {
      blackHole = false;
      dropConnections();
    },
    close() {
      dropConnections();
      return new Promise<void>((resolve) => (server?.listening ? server.close(() => resolve()) : resolve()));
    },
  };
}
