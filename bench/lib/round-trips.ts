import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Db, Queryable } from '../../src/db/types.js';
import { openServices } from '../../src/services.js';
import { PEER_SCHEMA } from '../peers/oidc-provider/adapter.js';
import { peerIntrospectBody, peerRefreshBody, peerSignIn } from '../peers/oidc-provider/driver.js';
import { createPeerProvider } from '../peers/oidc-provider/provider.js';
import { FORM } from './http.js';
import {
  authenticate,
  authorizePage,
  checkStatus,
  complete,
  exchangeCode,
  introspectBody,
  ourEnv,
  REDIRECT_URI,
  refreshBody,
  userinfo,
} from './ours.js';

/**
 * Counts statements sent to the database. A transaction adds its BEGIN and COMMIT: each is a
 * round trip of its own on the wire. Used in-process, for counting only (never timed).
 */
export function countingDb(db: Db) {
  let count = 0;
  const counted = (q: Queryable): Queryable => ({
    query: (sql, params) => {
      count += 1;
      return q.query(sql, params);
    },
    exec: (sql) => {
      count += 1;
      return q.exec(sql);
    },
  });
  const wrapped: Db = {
    ...counted(db),
    kind: db.kind,
    transaction: (fn) => {
      count += 2;
      return db.transaction((tx) => fn(counted(tx)));
    },
    // With its options: the grant cache serves from memory only once it hears that it listens.
    listen: (channel, onPayload, options) => db.listen(channel, onPayload, options),
    close: () => db.close(),
  };
  return {
    db: wrapped,
    /** Statements since the last call. */
    take() {
      const n = count;
      count = 0;
      return n;
    },
  };
}

export type RoundTrips = Record<string, number>;

async function measure(take: () => number, steps: [string, () => Promise<unknown>][]): Promise<RoundTrips> {
  const counts: RoundTrips = {};
  for (const [name, step] of steps) {
    take();
    await step();
    counts[name] = take();
  }
  return counts;
}

/** Our server in this process over a counting Db: statements per step of a sign-in and per operation. */
export async function ourRoundTrips(db: Db): Promise<RoundTrips> {
  const counter = countingDb(db);
  const config = loadConfig(ourEnv(0, 0, { dataDir: 'memory' }));
  const services = await openServices(config, counter.db);
  const app = await buildApp(services, { logger: false });
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const client = await services.store.clients.create({ name: 'Round trips', redirect_uris: [REDIRECT_URI] });
    const agent = await services.store.agents.create({ email: 'round-trips@example.com' });
    // The second sign-in is the one counted: nothing first-time (connections, caches) in it.
    let counts: RoundTrips = {};
    for (let i = 0; i < 2; i++) {
      let page!: Awaited<ReturnType<typeof authorizePage>>;
      let code!: string;
      let tokens!: Awaited<ReturnType<typeof exchangeCode>>;
      counts = await measure(counter.take, [
        ['authorize', async () => (page = await authorizePage(base, client))],
        ['authenticate', () => authenticate(base, agent, page.requestId)],
        ['check-status', () => checkStatus(base, page.requestId)],
        ['complete', async () => (code = await complete(base, page.jar, page.requestId))],
        ['token (authorization_code)', async () => (tokens = await exchangeCode(base, client, code, page.verifier))],
        ['userinfo', () => userinfo(base, tokens.access_token)],
        ['introspect (access token)', () => post(`${base}/introspect`, introspectBody(client, tokens.access_token))],
        ['introspect (refresh token)', () => post(`${base}/introspect`, introspectBody(client, tokens.refresh_token))],
        ['token (refresh_token)', () => post(`${base}/token`, refreshBody(client, tokens.refresh_token))],
      ]);
    }
    const signIn = ['authorize', 'authenticate', 'check-status', 'complete', 'token (authorization_code)', 'userinfo'];
    return { ...counts, 'full sign-in': signIn.reduce((sum, step) => sum + counts[step], 0) };
  } finally {
    await app.close();
    await services.db.close();
  }
}

async function post(url: string, body: string) {
  const res = await fetch(url, { method: 'POST', headers: FORM, body });
  if (res.status !== 200) throw new Error(`${url}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** node-oidc-provider in this process over the same counting Db: adapter calls per operation. */
export async function peerRoundTrips(db: Db): Promise<RoundTrips> {
  await db.exec(PEER_SCHEMA);
  const counter = countingDb(db);
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  server.on('request', createPeerProvider(base, counter.db).callback());
  try {
    let counts: RoundTrips = {};
    for (let i = 0; i < 2; i++) {
      let tokens!: Awaited<ReturnType<typeof peerSignIn>>;
      counts = await measure(counter.take, [
        ['sign-in to tokens', async () => (tokens = await peerSignIn(base, 'round-trips'))],
        ['userinfo', () => fetch(`${base}/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } }).then((r) => r.json())],
        ['introspect (access token)', () => post(`${base}/token/introspection`, peerIntrospectBody(tokens.access_token))],
        ['token (refresh_token)', () => post(`${base}/token`, peerRefreshBody(tokens.refresh_token))],
      ]);
    }
    // Like ours, the full sign-in ends with the website's userinfo call.
    return { ...counts, 'full sign-in': counts['sign-in to tokens'] + counts.userinfo };
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await db.close();
  }
}
