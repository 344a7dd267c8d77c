import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_HEADER_BYTES } from '../../src/fastify.js';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';

/** The median time of `runs` calls, in milliseconds. */
async function medianMs(runs: number, call: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    await call();
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)];
}

describe(`client authentication headers an attacker shapes (${storeName})`, () => {
  let server: ListeningServer;
  beforeAll(async () => {
    server = await startListeningServer();
  });
  afterAll(() => server.close());

  const introspectWith = (authorization: string) =>
    server.app.inject({
      method: 'POST',
      url: '/introspect',
      headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'token=x',
    });

  it('a Basic header of 16,000 spaces that fails to parse costs about what a normal one does', async () => {
    const normal = `Basic ${Buffer.from('unknown-client:wrong-secret').toString('base64')}`;
    const hostile = `basic ${' '.repeat(16_000)}x x`;
    // Same answer: no client authentication (a space inside the credentials is no Basic header).
    expect((await introspectWith(hostile)).statusCode).toBe(401);
    expect((await introspectWith(normal)).statusCode).toBe(401);
    await medianMs(5, () => introspectWith(normal)); // warm
    const normalMs = await medianMs(15, () => introspectWith(normal));
    const hostileMs = await medianMs(15, () => introspectWith(hostile));
    // A ratio, not milliseconds: the machine's speed cancels out. The quadratic parse took 100x and more.
    expect(hostileMs / normalMs).toBeLessThan(5);
  });

  it(`answers 431 to headers over ${MAX_HEADER_BYTES} bytes, and serves headers under it`, async () => {
    // A raw socket: Node's client reports the server's early close as a hang-up, before the answer.
    const status = (authorization: string) =>
      new Promise<number>((resolve, reject) => {
        const socket = connect(Number(new URL(server.issuer).port), '127.0.0.1');
        let answer = '';
        socket.on('data', (chunk) => (answer += String(chunk)));
        socket.on('error', reject);
        socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1])));
        socket.end(`GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: ${authorization}\r\n\r\n`);
      });
    expect(await status(`basic ${' '.repeat(MAX_HEADER_BYTES)}x`)).toBe(431);
    expect(await status(`basic ${' '.repeat(MAX_HEADER_BYTES - 1024)}x`)).toBe(200);
  });
});
