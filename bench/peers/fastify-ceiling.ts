import Fastify from 'fastify';

/** The ceiling: a bare Fastify JSON route, the most any Fastify endpoint can do on this machine. */
const app = Fastify({ logger: false });
app.get('/', async () => ({ hello: 'world' }));
await app.listen({ port: Number(process.env.PEER_PORT ?? 3200), host: '127.0.0.1' });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
