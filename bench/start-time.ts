/**
 * `npm run bench:start`: how long `npm start` takes to be ready, on an unchanged checkout and after a
 * source change, against the baseline of a start that recompiles everything first (what `npm start`
 * did before it built only what changed). Each case is timed from the spawn of `npm start` to the
 * server's "agent-auth ready" line and to the first 200 from /readyz; the cases run in turns, `--runs`
 * rounds, and the median counts.
 *
 *   npm run bench:start                         # 3 runs per case, the embedded store
 *   npm run bench:start -- --runs 5 --database-url postgres://postgres@127.0.0.1:5432/postgres
 *
 * Writes bench/results/<date>-start.md and .json.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: { runs: { type: 'string', default: '3' }, 'database-url': { type: 'string' }, out: { type: 'string', default: 'bench/results' } },
});
const RUNS = Number(args.runs);

interface Timing {
  /** Spawn to the "agent-auth ready" line, ms. */
  ready: number;
  /** Spawn to the first 200 of /readyz, ms. */
  readyz: number;
}

/** One `npm start` (or `before`, then `npm start`) on `dataDir`, timed, then stopped with SIGTERM. */
async function timedStart(dataDir: string, before?: string[]): Promise<Timing> {
  // Ports the system picks; the banner says which.
  const env = {
    ...process.env,
    PORT: '0',
    ADMIN_PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...(args['database-url'] ? { DATABASE_URL: args['database-url'] } : {}),
  };
  const started = performance.now();
  if (before) execFileSync(before[0], before.slice(1), { stdio: 'ignore' });
  const child: ChildProcess = spawn('npm', ['start'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  const ready = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      output += d;
      if (output.includes('agent-auth ready')) resolve(performance.now() - started);
    });
    child.stderr!.on('data', (d) => (output += d));
    child.on('exit', (code) => reject(new Error(`npm start exited (${code}):\n${output}`)));
  });
  let readyz = 0;
  while (!readyz) {
    const url = /public +listening on (\S+)/.exec(output)![1];
    const status = await fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) readyz = performance.now() - started;
    else await sleep(20);
  }
  const exited = new Promise((resolve) => child.on('exit', resolve));
  process.kill(-child.pid!, 'SIGTERM');
  await exited;
  return { ready, readyz };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// The cases, each on fresh data directories: a first start (a new store: migrations, a generated
// admin token) and a second one on the same data; then the same second start after a source file
// changed, and after a full compile (the baseline).
const cases: { name: string; first?: boolean; touch?: string; before?: string[] }[] = [
  { name: 'first start (new data directory)', first: true },
  { name: 'second start (unchanged checkout)' },
  // The file's time changes, not its content: tsc -b sees a newer source and checks the project again.
  { name: 'second start after a source file changed', touch: 'src/routes/health.ts' },
  {
    name: 'baseline: full compile, then start',
    before: ['npx', 'tsc', '-p', 'tsconfig.build.json', '--incremental', 'false', '--outDir', join(tmpdir(), 'agent-auth-bench-compile')],
  },
];

execFileSync('npm', ['run', 'build'], { stdio: 'ignore' });
// Other work on the machine stretches every figure alike; the ratios to the baseline hold better.
const loadBefore = loadavg()[0];
// In turns: each round runs every case once, so that the machine's other work falls on all of them alike.
const timings = new Map(cases.map((c) => [c.name, [] as Timing[]]));
for (let round = 0; round < RUNS; round++) {
  for (const c of cases) {
    const dir = mkdtempSync(join(tmpdir(), 'agent-auth-start-'));
    try {
      if (!c.first) await timedStart(dir);
      if (c.touch) utimesSync(c.touch, new Date(), new Date());
      const timing = await timedStart(dir, c.before);
      timings.get(c.name)!.push(timing);
      console.log(`round ${round + 1}, ${c.name}: ready ${Math.round(timing.ready)} ms`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
const results = Object.fromEntries(
  [...timings].map(([name, runs]) => [name, { ready: median(runs.map((r) => r.ready)), readyz: median(runs.map((r) => r.readyz)), runs }]),
);

const baseline = results[cases[3].name].ready;
const store = args['database-url'] ? 'PostgreSQL' : 'PGlite (on disk)';
const date = new Date().toISOString().slice(0, 10);
const load = `${loadBefore.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after`;
const lines = [
  `# npm start: time to ready (${date}, ${store}, median of ${RUNS})`,
  '',
  `Load average of the machine (1 min): ${load}.`,
  '',
  '| case | "agent-auth ready" | /readyz 200 | vs. baseline |',
  '| --- | --- | --- | --- |',
  ...Object.entries(results).map(
    ([name, r]) => `| ${name} | ${(r.ready / 1000).toFixed(1)} s | ${(r.readyz / 1000).toFixed(1)} s | ${(r.ready / baseline).toFixed(2)}× |`,
  ),
  '',
];
mkdirSync(args.out, { recursive: true });
writeFileSync(join(args.out, `${date}-start.md`), lines.join('\n'));
writeFileSync(join(args.out, `${date}-start.json`), JSON.stringify({ date, store, runs: RUNS, load, results }, null, 2));
console.log(lines.join('\n'));
