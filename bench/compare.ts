/**
 * `npm run bench:compare`: builds of our server side by side, in turns, beside the bare Fastify route, so that
 * a change's effect shows within the same minutes of one run (bench/README.md, "Comparing builds").
 */
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { postgresStore } from './lib/database.js';
import { hammer, type LoadOptions, loop, type Measurement } from './lib/load.js';
import { fullSignIn, ourHotReads, registerOurs } from './lib/ours.js';
import { cpuMs, type ServerProcess } from './lib/processes.js';
import { startOurServer, tsxProcess } from './lib/servers.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: {
    // NAME=DIR[,KEY=VALUE...], repeated: a checkout with its dist/ built, and settings of its own (LOG_LEVEL=info).
    // Default: this checkout alone.
    build: { type: 'string', multiple: true, default: [`this=${root}`] },
    ops: { type: 'string', default: 'ceiling,healthz,userinfo,introspect' },
    rounds: { type: 'string', default: '5' },
    duration: { type: 'string', default: '4' },
    connections: { type: 'string', default: '50' },
    // The sign-in is a loop of requests in this process (bench/lib/http.ts, send); fewer workers than autocannon's connections.
    'flow-connections': { type: 'string', default: '10' },
  },
});

const load: LoadOptions = { durationSeconds: Number(args.duration), connections: Number(args.connections) };
const flowConnections = Number(args['flow-connections']);
const ops = args.ops.split(',').map((s) => s.trim());
const builds = args.build.map((spec) => {
  const [build, ...settings] = spec.split(',');
  const [name, dir] = build.split('=');
  if (!name || !dir) throw new Error(`--build takes NAME=DIR[,KEY=VALUE...], not ${spec}`);
  const env = Object.fromEntries(settings.map((setting) => [setting.slice(0, setting.indexOf('=')), setting.slice(setting.indexOf('=') + 1)]));
  return { name, dir: `${dir.replace(/\/$/, '')}/`, env };
});
const log = (line: string) => process.stdout.write(`${line}\n`);
// Below the ephemeral range, as in run.ts.
const CEILING_PORT = 28450;

const store = await postgresStore(
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  builds.map((_, i) => `build_${i}`),
);
const ceiling = ops.includes('ceiling') ? await tsxProcess('ceiling', 'bench/peers/fastify-ceiling.ts', {}, CEILING_PORT) : undefined;
const servers = await Promise.all(
  builds.map(async (build, i) => {
    const ours = await startOurServer(build.dir, build.name, 28452 + 2 * i, store.location(`build_${i}`), [], build.env);
    const { client, agent } = await registerOurs(ours.adminBase);
    const hotReads = ourHotReads(ours.base, client, (await fullSignIn(ours.base, client, agent)).access_token);
    const run: Record<string, (options: LoadOptions) => Promise<Measurement>> = {
      healthz: (options) => hammer({ url: `${ours.base}/healthz` }, options),
      userinfo: (options) => hammer(hotReads.userinfo, options),
      introspect: (options) => hammer(hotReads.introspect, options),
      'full sign-in': (options) => loop(() => fullSignIn(ours.base, client, agent).then(() => {}), { ...options, connections: flowConnections }),
    };
    return { ...build, server: ours.server, run };
  }),
);

/**
 * The rate, and the CPU time per request (µs) of the server and of this process, which generates the load
 * (autocannon and the sign-in's loop run here) on the same cores.
 */
async function measure(server: ServerProcess, run: () => Promise<Measurement>) {
  const before = cpuMs(server.pid);
  const client = process.cpuUsage();
  const m = await run();
  if (m.errors > 0) throw new Error(`${server.name}: ${m.errors} errors`);
  const { user, system } = process.cpuUsage(client);
  return { rate: m.rate, cpuUs: (1000 * (cpuMs(server.pid) - before)) / m.count, clientUs: (user + system) / m.count };
}

type Sample = { rate: number; cpuUs: number; clientUs: number; share?: number };
const micros = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`);
const samples = new Map<string, Sample[]>();
const keep = (key: string, sample: Sample) => samples.set(key, [...(samples.get(key) ?? []), sample]);
// The same samples by round, for the paired ratios: builds measured in the same minutes.
const rounds = new Map<string, Sample>();
log(
  `${cpus().length} x ${cpus()[0]?.model.trim()}, load average ${loadavg()[0].toFixed(2)}; builds: ${builds.map((b) => `${b.name} (${b.dir})`).join(', ')}`,
);
try {
  // One short untimed pass first: the JIT's warm-up is not a build's cost.
  const warmUp = { ...load, durationSeconds: 1 };
  if (ceiling) await hammer({ url: `http://127.0.0.1:${CEILING_PORT}/` }, warmUp);
  for (const build of servers) for (const op of ops.filter((o) => o !== 'ceiling')) await build.run[op](warmUp);
  for (let round = 0; round < Number(args.rounds); round++) {
    const ceilingRate = ceiling ? await measure(ceiling, () => hammer({ url: `http://127.0.0.1:${CEILING_PORT}/` }, load)) : undefined;
    if (ceilingRate) keep('ceiling', ceilingRate);
    // Each round starts with another build, so that none is always measured on a warmer machine.
    const order = servers.map((_, i) => servers[(i + round) % servers.length]);
    for (const op of ops.filter((o) => o !== 'ceiling')) {
      for (const build of order) {
        const sample: Sample = await measure(build.server, () => build.run[op](load));
        if (ceilingRate && op !== 'full sign-in') sample.share = sample.rate / ceilingRate.rate;
        keep(`${build.name} ${op}`, sample);
        rounds.set(`${round} ${build.name} ${op}`, sample);
        log(
          `round ${round + 1}  ${`${build.name} ${op}`.padEnd(28)} ${sample.rate.toFixed(0).padStart(7)}/s  cpu ${sample.cpuUs.toFixed(1)} µs  load generator ${sample.clientUs.toFixed(1)} µs${sample.share ? `  ${sample.share.toFixed(2)}x of the bare route` : ''}`,
        );
      }
    }
  }
} finally {
  await Promise.all([ceiling?.stop(), ...servers.map((s) => s.server.stop())]);
  await store.dispose();
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
log(`\nmedians of ${args.rounds} rounds (${load.durationSeconds} s each; ${load.connections} connections, the sign-in ${flowConnections})\n`);
log('| run | requests (flows)/s | server CPU per request (flow) | load generator CPU | rate as a share of the bare route |');
log('| --- | ---: | ---: | ---: | ---: |');
for (const [key, list] of samples) {
  const shares = list.flatMap((s) => (s.share === undefined ? [] : [s.share]));
  const [cpu, client] = [median(list.map((s) => s.cpuUs)), median(list.map((s) => s.clientUs))];
  log(
    `| ${key} | ${median(list.map((s) => s.rate)).toFixed(0)} | ${micros(cpu)} | ${micros(client)} | ${shares.length ? `${median(shares).toFixed(2)}x` : ''} |`,
  );
}
if (builds.length > 1) {
  const [first, ...others] = builds;
  log(`\nagainst ${first.name}, paired by round: the median of the rounds' ratios\n`);
  log(`| run | requests (flows)/s | server CPU per request (flow) |`);
  log('| --- | ---: | ---: |');
  for (const op of ops.filter((o) => o !== 'ceiling')) {
    for (const build of others) {
      const pairs = Array.from({ length: Number(args.rounds) }, (_, round) => [
        rounds.get(`${round} ${first.name} ${op}`)!,
        rounds.get(`${round} ${build.name} ${op}`)!,
      ]);
      const rate = median(pairs.map(([a, b]) => b.rate / a.rate));
      const cpu = median(pairs.map(([a, b]) => b.cpuUs / a.cpuUs));
      log(`| ${build.name} ${op} | ${rate.toFixed(2)}x | ${cpu.toFixed(2)}x |`);
    }
  }
}
process.exit(0);
