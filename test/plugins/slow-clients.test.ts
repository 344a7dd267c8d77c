import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';

/** A raw connection to the server, with everything it has received and whether it was closed. */
function rawConnection(server: ListeningServer) {
  const socket: Socket = connect(Number(new URL(server.issuer).port), '127.0.0.1');
  const state = { received: '', closed: false, socket };
  socket.on('data', (chunk) => (state.received += String(chunk)));
  socket.on('error', () => {});
  socket.on('close', () => (state.closed = true));
  return state;
}

const until = async (check: () => boolean, ms: number) => {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return check();
};

describe(`slow clients (${storeName})`, () => {
  let server: ListeningServer;
  beforeAll(async () => {
    server = await startListeningServer({ REQUEST_TIMEOUT_SECONDS: '2', HEADERS_TIMEOUT_SECONDS: '1', MAX_CONNECTIONS_PER_IP: '5' });
  });
  afterAll(() => server.close());

  it('answers 408 and closes a connection whose body drips in slower than REQUEST_TIMEOUT_SECONDS', async () => {
    const drip = rawConnection(server);
    drip.socket.write('POST /token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n');
    const started = Date.now();
    const timer = setInterval(() => !drip.closed && drip.socket.write('a'), 200);
    try {
      expect(await until(() => drip.closed, 6000)).toBe(true);
    } finally {
      clearInterval(timer);
    }
    expect(drip.received).toMatch(/^HTTP\/1\.1 408 /);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('answers 408 and closes a connection whose headers do not arrive within HEADERS_TIMEOUT_SECONDS', async () => {
    const slow = rawConnection(server);
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    expect(await until(() => slow.closed, 4000)).toBe(true);
    expect(slow.received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes connections past MAX_CONNECTIONS_PER_IP from one address at once, and serves the others', async () => {
    const held = Array.from({ length: 5 }, () => rawConnection(server));
    await new Promise((r) => setTimeout(r, 300));
    const extra = rawConnection(server);
    expect(await until(() => extra.closed, 2000)).toBe(true);
    expect(held.every((c) => !c.closed)).toBe(true);
    held[0].socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await until(() => held[0].closed, 2000)).toBe(true);
    expect(held[0].received).toMatch(/^HTTP\/1\.1 200 /);
    for (const c of held) c.socket.destroy();
    // Once they are gone, the address may connect again.
    await new Promise((r) => setTimeout(r, 300));
    const again = rawConnection(server);
    again.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await until(() => again.closed, 2000)).toBe(true);
    expect(again.received).toMatch(/^HTTP\/1\.1 200 /);
  });
});
