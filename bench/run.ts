/**
 * `npm run bench`: our server against node-oidc-provider and a bare Fastify route, on PostgreSQL
 * and on the embedded store. See bench/README.md for what is measured and how to read it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { protectedResource } from '@agent-auth/website/mcp';
import { defaultOf } from '../src/config.js';
import { openPglite } from '../src/db/pglite.js';
import { openPostgres } from '../src/db/postgres.js';
import type { Db } from '../src/db/types.js';
import { type BenchStore, cacheFillClient, pgliteStore, postgresStore, seedCacheFill, seedLargeStore, type StoreKind } from './lib/database.js';
import { guard, GUARDED } from './lib/guard.js';
import { expectStatus, FORM } from './lib/http.js';
import { hammer, inParallel, type LoadOptions, loop, type Measurement, refreshChain, type Target } from './lib/load.js';
import {
  codeExchangeBody,
  fullSignIn,
  grantCacheMisses,
  type HotRead,
  introspectBody,
  type OurClient,
  ourHotReads,
  refreshBody,
  registerOurs,
  RESOURCE,
  resourceSignIn,
  signInToCode,
  type TokenSet,
  userinfo,
} from './lib/ours.js';
import { cpuMs, type ServerProcess } from './lib/processes.js';
import { checkTargets, type StoreReport, toMarkdown, writeReport } from './lib/report.js';
import { ourRoundTrips, peerRoundTrips } from './lib/round-trips.js';
import { startOurServer, tsxProcess } from './lib/servers.js';
import { peerIntrospectBody, peerRefreshBody, peerSignIn } from './peers/oidc-provider/driver.js';
import { summarise } from './profile-summary.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: {
    store: { type: 'string', default: 'postgres,pglite' },
    duration: { type: 'string' },
    connections: { type: 'string' },
    codes: { type: 'string' },
    rows: { type: 'string', default: '1000000' },
    smoke: { type: 'boolean', default: false },
    'no-large': { type: 'boolean', default: false },
    'no-peer': { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    out: { type: 'string', default: `${root}bench/results` },
    // Only these of our operations (comma-separated names as in the table); skips everything else.
    only: { type: 'string' },
    // Another checkout of the server to measure (its dist/ is built and run), e.g. to compare before/after.
    server: { type: 'string' },
    // Runs our server under --cpu-prof and prints where its time went.
    profile: { type: 'boolean', default: false },
    // A short run of the hot paths beside the bare route, failing when one falls below 0.8 of the figure
    // recorded in bench/results/guard.json for this machine class (--record writes that figure).
    guard: { type: 'boolean', default: false },
    record: { type: 'boolean', default: false },
    // Grants held in the "cache full" run (GRANT_CACHE_SIZE of that server); default: the setting's default.
    'cache-size': { type: 'string' },
  },
});

const serverDir = args.server ? `${args.server.replace(/\/$/, '')}/` : root;
const smoke = args.smoke;
const onlyOps = args.guard ? ['ceiling', ...GUARDED] : args.only?.split(',').map((s) => s.trim());
const only = (op: string) => !onlyOps || onlyOps.includes(op);
const load: LoadOptions = {
  durationSeconds: Number(args.duration ?? (smoke ? 2 : args.guard ? 5 : 10)),
  connections: Number(args.connections ?? (smoke ? 4 : 10)),
};
const codeCount = Number(args.codes ?? (smoke ? 50 : 3000));
// A smoke run checks that everything works end to end; the million rows take minutes to seed.
const largeRows = smoke || onlyOps || args['no-large'] ? 0 : Number(args.rows);
const adminUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// Each of our servers takes its port and the next (the admin listener).
// Below Linux's ephemeral range (32768 and up): a port there can be taken by one of the bench's own kept-alive client sockets.
const PORTS = { ours: 28400, peer: 28402, ceiling: 28403, large: 28404, peerMemory: 28408, cacheFull: 28410, headToHead: 28412 };
const PEER_NOTE =
  'node-oidc-provider 9 (Koa) with a PostgreSQL key/value adapter (bench/peers/oidc-provider), opaque access tokens ' +
  '(its default; each one is a row), rotating refresh tokens, HS256 ID tokens, accounts in memory. It prints ' +
  '"Unsupported runtime" on Node 20 but runs. "peer in memory": the same with its default in-memory adapter ' +
  '(no database; one process only, nothing survives a restart), the fastest configuration it has.';

const log = (line: string) => process.stdout.write(`${line}\n`);

/** The two hot reads of node-oidc-provider, as `ourHotReads` are ours. */
const peerHotReads = (base: string, access: string): Record<HotRead, Target> => ({
  userinfo: { url: `${base}/me`, headers: { authorization: `Bearer ${access}` } },
  introspect: { url: `${base}/token/introspection`, method: 'POST', headers: FORM, body: peerIntrospectBody(access) },
});

/** Of several measurements of one operation, per operation, the one with the median `by`. */
function medians(samples: Record<string, Measurement[]>, by: (m: Measurement) => number): Record<string, Measurement> {
  const median = (ms: Measurement[]) => [...ms].sort((a, b) => by(a) - by(b))[Math.floor(ms.length / 2)];
  return Object.fromEntries(Object.entries(samples).map(([op, ms]) => [op, median(ms)]));
}

/** One of our servers: the checkout under test (this one, or --server). */
function startOurs(
  name: string,
  port: number,
  location: { url?: string; dataDir?: string },
  nodeFlags: string[] = [],
  env: Record<string, string> = {},
) {
  return startOurServer(serverDir, name, port, location, nodeFlags, env);
}

/** Runs one measurement and adds the CPU time the server and the database spent per request. */
async function measured(name: string, server: ServerProcess, store: BenchStore, run: () => Promise<Measurement>): Promise<Measurement> {
  const [cpu0, db0] = [cpuMs(server.pid), await store.databaseCpuMs()];
  const m = await run();
  const [cpu1, db1] = [cpuMs(server.pid), await store.databaseCpuMs()];
  // Backends that came during the run count whole; one that left (idle timeout) is not counted at all.
  const dbMs = [...db1].reduce((sum, [pid, ms]) => sum + ms - (db0.get(pid) ?? 0), 0);
  const per = (ms: number) => Math.round((1000 * ms) / Math.max(1, m.count)) / 1000;
  const result = { ...m, cpuMs: per(cpu1 - cpu0), ...(store.kind === 'postgres' ? { dbCpuMs: per(dbMs) } : {}) };
  log(
    `  ${name.padEnd(28)} ${m.rate.toFixed(0).padStart(7)}/s  p50 ${m.p50} ms  p99 ${m.p99} ms  errors ${m.errors}` +
      (m.rateLimited ? ` (${m.rateLimited} × 429)` : '') +
      `  cpu/op ${result.cpuMs} ms${result.dbCpuMs === undefined ? '' : ` (+ db ${result.dbCpuMs} ms)`}`,
  );
  return result;
}

/** The same chain as a flow, for the latency comparison with a sub-millisecond clock. */
function refreshFlow(base: string, client: OurClient, initial: string[]) {
  const pool = [...initial];
  return async () => {
    const token = pool.shift();
    if (!token) throw new Error('no refresh token left');
    const res = await fetch(`${base}/token`, { method: 'POST', headers: FORM, body: refreshBody(client, token) });
    if (res.status !== 200) throw new Error(`refresh: ${res.status}`);
    pool.push(((await res.json()) as { refresh_token: string }).refresh_token);
  };
}

function requestFlow(url: string, init: RequestInit) {
  return async () => {
    const res = await fetch(url, init);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  };
}

async function benchOurs(store: BenchStore, report: Partial<StoreReport>) {
  const profileDir = `${args.out}/profiles`;
  const { server, base, adminBase } = await startOurs(
    'ours',
    PORTS.ours,
    store.location('ours'),
    args.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [],
  );
  try {
    const { client, agent, keyed } = await registerOurs(adminBase);
    const codes = only('token (authorization_code)') ? codeCount : 0;
    log(`  preparing: ${load.connections + 1} sign-ins, ${codes} codes`);
    const access = (await fullSignIn(base, client, agent)).access_token;
    const chains = await inParallel(load.connections, load.connections, async () => (await fullSignIn(base, client, agent)).refresh_token);
    const prepared = await inParallel(codes, load.connections, () => signInToCode(base, client, agent));

    const hotReads = ourHotReads(base, client, access);
    // The MCP server's side: the website kit, its keys fetched once from our JWKS.
    const kit = protectedResource({ issuer: base, resource: RESOURCE });
    const resourceToken = (await resourceSignIn(base, client, agent, kit.verifyToken)).access_token;
    const operations: [string, () => Promise<Measurement>][] = [
      ['userinfo', () => hammer(hotReads.userinfo, load)],
      ['introspect', () => hammer(hotReads.introspect, load)],
      [
        'token (refresh_token)',
        () =>
          hammer(
            refreshChain(`${base}/token`, chains, (t) => refreshBody(client, t)),
            load,
          ),
      ],
      [
        'token (authorization_code)',
        () =>
          hammer(
            {
              url: `${base}/token`,
              method: 'POST',
              headers: FORM,
              next: () => {
                const next = prepared.shift();
                return { body: next ? codeExchangeBody(client, next.code, next.verifier) : 'exhausted' };
              },
              amount: codes,
            },
            load,
          ),
      ],
      ['full sign-in', () => loop(() => fullSignIn(base, client, agent).then(() => {}), load)],
      // The same sign-in, the agent proving itself with an Ed25519 assertion instead of its secret.
      ['full sign-in (assertion)', () => loop(() => fullSignIn(base, client, keyed).then(() => {}), load)],
      // The same sign-in for a resource (RFC 8707): an RS256 JWT access token, checked by the kit, not by userinfo.
      ['sign-in to a resource', () => loop(() => resourceSignIn(base, client, agent, kit.verifyToken).then(() => {}), load)],
      // The MCP server's check of that token, in this process: signature, claims, scope; no call to us.
      ['resource token verification (kit)', () => loop(() => kit.verifyToken(resourceToken).then(() => {}), load)],
    ];
    server.resetRss();
    const ours: Record<string, Measurement> = {};
    for (const [name, run] of operations) if (only(name)) ours[name] = await measured(name, server, store, run);
    report.ours = ours;

    report.rssMb!.ours = { peak: server.peakRssMb(), underLoad: server.sampledRssMb() };
    log(`  peak RSS ${report.rssMb!.ours.peak} MB`);
  } finally {
    await server.stop();
  }
  if (args.profile) {
    const newest = readdirSync(profileDir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => join(profileDir, f))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
    log(`\nprofile of our server: ${newest}\n${summarise(JSON.parse(readFileSync(newest, 'utf8')))}`);
  }
}

/**
 * The same operations on an empty store and on one holding `largeRows` refresh tokens and past
 * requests: two servers side by side, measured in turns (three rounds, the median p50 counts), so
 * that the machine's load drifting during the run weighs on both alike.
 */
async function benchLarge(store: BenchStore, report: Partial<StoreReport>) {
  const servers: { name: 'empty' | 'large'; server: ServerProcess; base: string; adminBase: string; url: string }[] = [];
  try {
    for (const [i, name] of (['empty', 'large'] as const).entries()) {
      const location = store.location(name);
      servers.push({ name, ...(await startOurs(name, PORTS.large + 2 * i, location)), url: location.url! });
    }
    log(`  seeding ${largeRows.toLocaleString('en')} refresh tokens and past requests`);
    const t0 = Date.now();
    await seedLargeStore(servers[1].url, largeRows);
    log(`  seeded in ${((Date.now() - t0) / 1000).toFixed(0)} s`);

    const flows = await Promise.all(
      servers.map(async ({ base, adminBase, server }) => {
        const { client, agent } = await registerOurs(adminBase);
        const access = (await fullSignIn(base, client, agent)).access_token;
        const chains = await inParallel(load.connections, load.connections, async () => (await fullSignIn(base, client, agent)).refresh_token);
        return {
          server,
          ops: {
            'token (refresh_token)': refreshFlow(base, client, chains),
            introspect: requestFlow(`${base}/introspect`, { method: 'POST', headers: FORM, body: introspectBody(client, access) }),
            userinfo: requestFlow(`${base}/userinfo`, { headers: { authorization: `Bearer ${access}` } }),
          },
        };
      }),
    );
    const turn = { ...load, durationSeconds: Math.max(2, load.durationSeconds / 2) };
    // Both servers warm (JIT) before anything counts.
    for (const { ops } of flows) for (const flow of Object.values(ops)) await loop(flow, { ...turn, durationSeconds: 2 });
    const samples: Record<string, Record<string, Measurement[]>> = { empty: {}, large: {} };
    for (let round = 0; round < 3; round++) {
      // Each store goes first in turn.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const i of order) {
        const { server, ops } = flows[i];
        for (const [op, flow] of Object.entries(ops)) {
          const m = await measured(`${op} (${servers[i].name})`, server, store, () => loop(flow, turn));
          (samples[servers[i].name][op] ??= []).push(m);
        }
      }
    }
    const p50 = (m: Measurement) => m.p50;
    report.large = { rows: largeRows, empty: medians(samples.empty, p50), large: medians(samples.large, p50) };
  } finally {
    for (const { server } of servers) await server.stop();
  }
}

/**
 * Memory with the grant cache full (at its default size, or `--cache-size`): as many websites, each with a grant of one
 * agent, are seeded in SQL; each grant's refresh token is exchanged once over HTTP for a real access
 * token; each token is introspected (by its own website) and read once, so that every grant, client and
 * verified token is held at once; then introspection and userinfo cycle through all of them under load.
 * PostgreSQL only (seeding beside a running server).
 */
async function benchCacheFull(store: BenchStore, report: Partial<StoreReport>) {
  const size = Number(args['cache-size'] ?? defaultOf('GRANT_CACHE_SIZE'));
  const location = store.location('cache_full');
  const { server, base, adminBase } = await startOurs('cache full', PORTS.cacheFull, location, [], { GRANT_CACHE_SIZE: String(size) });
  try {
    const { agent } = await registerOurs(adminBase);
    log(`  seeding ${size.toLocaleString('en')} websites and grants, one access token each`);
    await seedCacheFill(location.url!, size, agent.agent_id);
    const tokens = await inParallel(size, load.connections, async (i) => {
      const website = cacheFillClient(i + 1);
      const res = await fetch(`${base}/token`, { method: 'POST', headers: FORM, body: refreshBody(website, website.refresh_token) });
      return { website, access: ((await (await expectStatus(res, 200)).json()) as TokenSet).access_token };
    });
    // Every token read once each way before the load, so that the cache is full whatever the load's
    // rate: at 100,000 grants, cycling through them under load for a few seconds read a third of them.
    log(`  filling the cache: each token introspected and read once`);
    await inParallel(size, load.connections, async (i) => {
      const { website, access } = tokens[i];
      await expectStatus(await fetch(`${base}/introspect`, { method: 'POST', headers: FORM, body: introspectBody(website, access) }), 200);
      await userinfo(base, access);
    });
    const missesBefore = await grantCacheMisses(adminBase);
    let next = 0;
    const each =
      <T>(make: (t: (typeof tokens)[number]) => T) =>
      () =>
        make(tokens[next++ % size]);
    server.resetRss();
    report.cacheFull = {
      size,
      introspect: await measured('introspect, cache full', server, store, () =>
        hammer(
          { url: `${base}/introspect`, method: 'POST', headers: FORM, next: each((t) => ({ body: introspectBody(t.website, t.access) })) },
          load,
        ),
      ),
      userinfo: await measured('userinfo, cache full', server, store, () =>
        hammer({ url: `${base}/userinfo`, next: each((t) => ({ headers: { authorization: `Bearer ${t.access}` } })) }, load),
      ),
    };
    // Reads the cache could not answer under load: a grant read more than GRANT_CACHE_MAX_AGE_SECONDS before is
    // read again, so this counts those as well as any the cache did not hold.
    report.cacheFull.missesUnderLoad = (await grantCacheMisses(adminBase)) - missesBefore;
    log(`  grant reads missed under load: ${report.cacheFull.missesUnderLoad}`);
    report.rssMb!['ours, cache full'] = { peak: server.peakRssMb(), underLoad: server.sampledRssMb() };
    log(`  peak RSS ${report.rssMb!['ours, cache full'].peak} MB, highest sampled under load ${report.rssMb!['ours, cache full'].underLoad} MB`);
  } finally {
    await server.stop();
  }
}

const HEAD_TO_HEAD_ROUNDS = 3;

/**
 * Our hot reads against node-oidc-provider in memory with both servers up, measured in turns
 * (HEAD_TO_HEAD_ROUNDS rounds, each server first in turn; the median rate counts), so that the
 * machine's drift during a run weighs on both alike: the sections above measure them minutes apart.
 */
async function benchHeadToHead(store: BenchStore, report: Partial<StoreReport>) {
  const { server: ours, base, adminBase } = await startOurs('ours', PORTS.headToHead, store.location('head_to_head'));
  const peerPort = PORTS.headToHead + 2;
  const peer = await tsxProcess('peer in memory', 'bench/peers/oidc-provider/server.ts', { PEER_ADAPTER: 'memory' }, peerPort);
  try {
    const { client, agent } = await registerOurs(adminBase);
    const peerBase = `http://127.0.0.1:${peerPort}`;
    const sides = [
      { name: 'ours', server: ours, reads: ourHotReads(base, client, (await fullSignIn(base, client, agent)).access_token) },
      { name: 'peer in memory', server: peer, reads: peerHotReads(peerBase, (await peerSignIn(peerBase, 'bench-head-to-head')).access_token) },
    ];
    // Both warm (JIT) before anything counts.
    for (const { reads } of sides) for (const target of Object.values(reads)) await hammer(target, { ...load, durationSeconds: 2 });
    const samples: Record<string, Record<string, Measurement[]>> = { ours: {}, 'peer in memory': {} };
    for (let round = 0; round < HEAD_TO_HEAD_ROUNDS; round++) {
      for (const op of ['userinfo', 'introspect'] as const) {
        for (const { name, server, reads } of round % 2 === 0 ? sides : [...sides].reverse()) {
          (samples[name][op] ??= []).push(await measured(`${op} (${name})`, server, store, () => hammer(reads[op], load)));
        }
      }
    }
    const rate = (m: Measurement) => m.rate;
    report.headToHead = { rounds: HEAD_TO_HEAD_ROUNDS, ours: medians(samples.ours, rate), peerInMemory: medians(samples['peer in memory'], rate) };
  } finally {
    await ours.stop();
    await peer.stop();
  }
}

/** node-oidc-provider over the store under test, or (`inMemory`) with its own in-memory adapter. */
async function benchPeer(store: BenchStore, report: Partial<StoreReport>, inMemory = false) {
  const location = store.location('peer');
  const env: Record<string, string> = inMemory
    ? { PEER_ADAPTER: 'memory' }
    : location.url
      ? { DATABASE_URL: location.url }
      : { DATA_DIR: location.dataDir! };
  const port = inMemory ? PORTS.peerMemory : PORTS.peer;
  const name = inMemory ? 'peer in memory' : 'peer';
  const server = await tsxProcess(name, 'bench/peers/oidc-provider/server.ts', env, port);
  const base = `http://127.0.0.1:${port}`;
  try {
    const access = (await peerSignIn(base, 'bench-account')).access_token;
    const chains = await inParallel(load.connections, load.connections, async (i) => (await peerSignIn(base, `bench-account-${i}`)).refresh_token);
    server.resetRss();
    const peer: Record<string, Measurement> = {};
    const hotReads = peerHotReads(base, access);
    peer.userinfo = await measured('userinfo', server, store, () => hammer(hotReads.userinfo, load));
    peer.introspect = await measured('introspect', server, store, () => hammer(hotReads.introspect, load));
    peer['token (refresh_token)'] = await measured('token (refresh_token)', server, store, () =>
      hammer(refreshChain(`${base}/token`, chains, peerRefreshBody), load),
    );
    report[inMemory ? 'peerInMemory' : 'peer'] = peer;
    report.rssMb![name] = { peak: server.peakRssMb(), underLoad: server.sampledRssMb() };
  } finally {
    await server.stop();
  }
}

async function benchCeiling(store: BenchStore, report: Partial<StoreReport>) {
  const server: ServerProcess = await tsxProcess('ceiling', 'bench/peers/fastify-ceiling.ts', {}, PORTS.ceiling);
  try {
    server.resetRss();
    report.ceiling = await measured('bare Fastify JSON route', server, store, () => hammer({ url: `http://127.0.0.1:${PORTS.ceiling}/` }, load));
    report.rssMb!.ceiling = { peak: server.peakRssMb(), underLoad: server.sampledRssMb() };
  } finally {
    await server.stop();
  }
}

async function benchStore(kind: StoreKind): Promise<StoreReport | undefined> {
  log(`\n== store: ${kind} ==`);
  const store =
    kind === 'postgres'
      ? await postgresStore(adminUrl, ['ours', 'peer', 'rt_ours', 'rt_peer', 'empty', 'large', 'cache_full', 'head_to_head'])
      : pgliteStore();
  const openCounted = (name: string): Promise<Db> =>
    kind === 'postgres' ? Promise.resolve(openPostgres(store.location(name).url!, defaultOf('DATABASE_TIMEOUT_MS'))) : openPglite('memory');
  const report: Partial<StoreReport> = {
    store: kind,
    date: new Date().toISOString().slice(0, 10),
    machine: { node: process.version, cpus: cpus().length, loadAverage: loadavg() },
    options: { ...load, codes: codeCount, smoke },
    peerNote: PEER_NOTE,
    rssMb: {},
  };
  try {
    if (onlyOps) {
      // A partial run, e.g. for a profile: our server and the operations named, and the ceiling and
      // the peer in memory when named too (ratios hold only within one run).
      if (only('ceiling')) {
        log('ceiling');
        await benchCeiling(store, report);
      }
      log('ours');
      await benchOurs(store, report);
      if (only('cache full') && kind === 'postgres') await benchCacheFull(store, report);
      if (only('peer in memory')) {
        log('node-oidc-provider, in-memory adapter');
        await benchPeer(store, report, true);
      }
      if (only('head to head')) {
        log('ours and node-oidc-provider in memory, in turns');
        await benchHeadToHead(store, report);
      }
      if (args.guard) {
        const { lines, held } = guard(`${root}bench/results/guard.json`, kind, report.ceiling!, report.ours!, args.record);
        log(`\nguard (${kind}):\n${lines.join('\n')}`);
        if (!held) process.exitCode = 1;
      }
      return undefined;
    }
    log('round trips (in process, counting Db)');
    report.roundTrips = {
      ours: await ourRoundTrips(await openCounted('rt_ours')),
      ...(args['no-peer'] ? {} : { peer: await peerRoundTrips(await openCounted('rt_peer')) }),
    };
    log(`  ours ${JSON.stringify(report.roundTrips.ours)}`);
    if (report.roundTrips.peer) log(`  peer ${JSON.stringify(report.roundTrips.peer)}`);
    log('ceiling');
    await benchCeiling(store, report);
    log('ours');
    await benchOurs(store, report);
    if (!smoke && kind === 'postgres') await benchCacheFull(store, report);
    if (largeRows > 0 && kind === 'postgres') {
      log('empty and large store');
      await benchLarge(store, report);
    }
    if (!args['no-peer']) {
      log('node-oidc-provider');
      await benchPeer(store, report);
      log('node-oidc-provider, in-memory adapter');
      await benchPeer(store, report, true);
      log('ours and node-oidc-provider in memory, in turns');
      await benchHeadToHead(store, report);
    }
  } finally {
    await store.dispose();
  }
  const complete = report as Omit<StoreReport, 'targets'>;
  return { ...complete, targets: checkTargets(complete) };
}

function build() {
  if (args['no-build']) return;
  const result = spawnSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', `${serverDir}tsconfig.build.json`], {
    stdio: 'inherit',
  });
  if (result.status !== 0) {
    if (!existsSync(`${serverDir}dist/main.js`)) throw new Error('build failed and there is no dist/main.js');
    log('warning: the build reported errors; benchmarking the dist/ it emitted');
  }
}

build();
const stores = args.store.split(',').map((s) => s.trim()) as StoreKind[];
for (const kind of stores) {
  if (kind !== 'postgres' && kind !== 'pglite') throw new Error(`unknown store ${kind}`);
  const report = await benchStore(kind);
  if (!report) continue;
  log(`\n${toMarkdown(report)}`);
  log(`written to ${writeReport(args.out, report)}.{md,json}`);
}
// Keep-alive sockets of fetch would hold the process open for a few seconds more.
process.exit(process.exitCode ?? 0);
