import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../src/config.js';
import { createTestDatabase, storeName, type TestDatabase } from './helpers/database.js';

/** How long a first start on a new embedded store may take here: a minute and more on a busy 2-core machine. */
const FIRST_START_MS = 150_000;

// No Docker engine runs where the tests run: the deployment files are checked by reading them,
// and the image's start-up is reproduced with the same files and command outside a container.

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (file: string) => readFileSync(join(root, file), 'utf8');

// ---------------------------------------------------------------- Dockerfile

interface Instruction {
  op: string;
  args: string;
}

function dockerfileStages(text: string): Instruction[][] {
  const instructions = text
    .replace(/\\\r?\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [, op, args] = /^(\S+)\s+(.*)$/.exec(line)!;
      return { op: op.toUpperCase(), args: args.trim() };
    });
  const stages: Instruction[][] = [];
  for (const ins of instructions) {
    if (ins.op === 'FROM') stages.push([]);
    stages.at(-1)!.push(ins);
  }
  return stages;
}

/** `COPY [--flags] src... dest` → the sources and whether they come from another stage. */
function copySources(ins: Instruction): { sources: string[]; fromStage: boolean } {
  const words = ins.args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith('--'));
  const paths = words.filter((w) => !w.startsWith('--'));
  return { sources: paths.slice(0, -1), fromStage: flags.some((f) => f.startsWith('--from=')) };
}

const stages = dockerfileStages(read('Dockerfile'));
const runtime = stages.at(-1)!;
const runtimeOps = (op: string) => runtime.filter((i) => i.op === op);

/** What the runtime stage copies into /app, as paths relative to /app (e.g. `dist`, `package.json`). */
const imageFiles = runtimeOps('COPY').flatMap((ins) => copySources(ins).sources.map((s) => s.replace(/^\/app\//, '')));

/** The build stage: the one the runtime stage takes dist/ from. */
const buildStage = (() => {
  const from = runtimeOps('COPY').find((i) => copySources(i).sources.includes('/app/dist'))!.args;
  const name = /--from=(\S+)/.exec(from)![1];
  return stages.find((stage) => new RegExp(`\\sAS\\s+${name}$`, 'i').test(stage[0].args))!;
})();

const dockerignore = read('.dockerignore')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

/** Whether a top-level entry of the repository stays out of the build context. */
function ignoredByDocker(name: string): boolean {
  return dockerignore.some((pattern) => new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`).test(name));
}

describe('Dockerfile', () => {
  it('builds every stage on the official slim image of a Node LTS line (22 or 24) that the project supports', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage[0].args.split(/\s+/)[0]).toMatch(/^node:(22|24)-[a-z0-9.-]*slim$/);
    // The project keeps supporting Node 20.11 for development; the image's Node must satisfy the same range.
    expect(JSON.parse(read('package.json')).engines.node).toBe('>=20.11');
  });

  it('runs the final stage as a user other than root', () => {
    const user = runtimeOps('USER').at(-1)?.args;
    expect(user).toBeDefined();
    expect(user).not.toMatch(/^(root|0)(:|$)/);
  });

  it('sets production mode and keeps data in the /data volume', () => {
    const env = Object.fromEntries(runtimeOps('ENV').flatMap((i) => i.args.split(/\s+/).map((pair) => pair.split('=') as [string, string])));
    expect(env).toMatchObject({ NODE_ENV: 'production', DATA_DIR: '/data' });
    expect(runtimeOps('VOLUME').map((i) => i.args)).toContain('/data');
    expect(runtimeOps('RUN').some((i) => /chown\s+node(:node)?\s+\/data/.test(i.args))).toBe(true);
  });

  it('exposes both listeners, probes /healthz with node and starts dist/main.js', () => {
    const ports = runtimeOps('EXPOSE').flatMap((i) => i.args.split(/\s+/));
    expect(ports).toEqual(expect.arrayContaining(['3000', '3001']));
    const healthcheck = runtimeOps('HEALTHCHECK');
    expect(healthcheck).toHaveLength(1);
    expect(healthcheck[0].args).toMatch(/CMD node -e .*\/healthz/);
    // Failed probes of a first start on a new embedded store count against nothing: its start period is at
    // least the time the first-start test below allows.
    expect(Number(/--start-period=(\d+)s/.exec(healthcheck[0].args)?.[1]) * 1000).toBeGreaterThanOrEqual(FIRST_START_MS);
    // The container starts the server as npm start does, with the same V8 flags.
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts.start;
    expect(JSON.parse(runtimeOps('CMD').at(-1)!.args)).toEqual(start.split(' '));
  });

  it('ships the compiled server, templates, migrations and production dependencies', () => {
    expect(imageFiles).toEqual(expect.arrayContaining(['dist', 'views', 'migrations', 'node_modules', 'package.json']));
    const prodInstall = stages.flatMap((s) => s).filter((i) => i.op === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args));
    expect(prodInstall).toHaveLength(1);
    expect(prodInstall[0].args).toContain('--ignore-scripts');
  });

  it('copies from the build context only files that exist and that .dockerignore lets through', () => {
    const fromContext = stages
      .flat()
      .filter((i) => i.op === 'COPY' && !copySources(i).fromStage)
      .flatMap((i) => copySources(i).sources)
      .filter((s) => s !== '.');
    expect(fromContext.length).toBeGreaterThan(0);
    for (const source of fromContext) {
      expect(existsSync(join(root, source)), source).toBe(true);
      expect(ignoredByDocker(source), source).toBe(false);
    }
    for (const name of ['node_modules', 'dist', 'data', '.git', '.env', '.env.local']) {
      expect(ignoredByDocker(name), name).toBe(true);
    }
  });
});

// ---------------------------------------------------------------- docker-compose.yml

type Service = Record<string, any>;
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const services = compose.services;
const composeText = read('docker-compose.yml');

/** Variables .env.example names, commented out (optional) or not, with the values it gives. */
const envExample = new Map(
  read('.env.example')
    .split('\n')
    .map((line) => /^#?\s*([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim()))
    .filter((m) => m !== null)
    .map((m) => [m[1], m[2]] as const),
);

/** Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?error}` substitution. */
function interpolate(value: string, vars: Record<string, string>): string {
  return value.replace(/\$\{([A-Z][A-Z0-9_]*)(?::([-?])([^}]*))?\}/g, (_, name: string, kind?: string, rest?: string) => {
    const set = vars[name];
    if (set) return set;
    if (kind === '?') throw new Error(`${name} is required: ${rest}`);
    return kind === '-' ? rest! : '';
  });
}

/** The configuration a service's container gets, from the image's ENV and the compose environment. */
function containerConfig(service: Service, vars: Record<string, string>) {
  const env: Record<string, string> = { NODE_ENV: 'production', DATA_DIR: '/data' };
  for (const [key, value] of Object.entries<string>(service.environment)) env[key] = interpolate(String(value), vars);
  return loadConfig(env);
}

// What an operator puts in .env after following .env.example.
const operatorEnv = {
  POSTGRES_PASSWORD: 'b3c0ffee0123456789abcdef',
  ADMIN_TOKEN: 'a'.repeat(64),
  JWT_SECRET: 'j'.repeat(64),
};

describe('docker-compose.yml', () => {
  it('runs postgres:16 with a volume and a pg_isready healthcheck', () => {
    const pg = services.postgres;
    expect(pg.image).toBe('postgres:16');
    const volume = pg.volumes.find((v: string) => v.endsWith(':/var/lib/postgresql/data'));
    expect(compose.volumes).toHaveProperty(volume.split(':')[0]);
    expect(pg.healthcheck.test.join(' ')).toContain('pg_isready');
    expect(pg.environment.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD[:?}]/);
  });

  it('builds agent-auth from this repository and starts it once postgres is healthy', () => {
    const app = services['agent-auth'];
    expect(app.build).toBe('.');
    expect(app.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(app.profiles).toBeUndefined();
    // Probed on the PORT the container is given (run for real below, in the image's start-up).
    expect(app.healthcheck.test.join(' ')).toContain("fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz'");
  });

  it("publishes the public port only: the admin listener stays on each container's loopback, out of the shared network", () => {
    const app = services['agent-auth'];
    expect(app.ports).toEqual(['3000:3000']);
    for (const name of ['agent-auth', 'agent-auth-1', 'agent-auth-2']) {
      const config = containerConfig(services[name], operatorEnv);
      expect(config.adminHost, name).toBe('127.0.0.1');
      expect(services[name].environment.ADMIN_HOST, name).toBeUndefined();
    }
    expect(containerConfig(app, operatorEnv).issuer).toBe('http://localhost:3000');
    expect(composeText).toContain('docker compose exec agent-auth node dist/cli.js');
  });

  it("limits each agent-auth container's memory from the measured peak resident size, with headroom", () => {
    // docs/operations.md gives the peak with the grant cache full, measured by the bench.
    const peakMb = Number(/peaked at (\d+) MB/.exec(read('docs/operations.md'))![1]);
    for (const name of ['agent-auth', 'agent-auth-1', 'agent-auth-2']) {
      const limit = services[name].deploy.resources.limits.memory as string;
      const mb = Number(/^(\d+)M$/.exec(limit)![1]);
      expect(mb, name).toBeGreaterThanOrEqual(1.5 * peakMb);
      expect(mb, name).toBeLessThanOrEqual(4 * peakMb);
    }
  });

  it('gives every agent-auth service a valid configuration over the postgres service', () => {
    for (const name of ['agent-auth', 'agent-auth-1', 'agent-auth-2']) {
      const config = containerConfig(services[name], operatorEnv);
      const db = new URL(config.databaseUrl!);
      expect(db.hostname, name).toBe('postgres');
      expect(decodeURIComponent(db.password)).toBe(operatorEnv.POSTGRES_PASSWORD);
      expect(db.pathname.slice(1)).toBe(services.postgres.environment.POSTGRES_DB);
      expect(db.username).toBe(services.postgres.environment.POSTGRES_USER);
      expect(config.adminToken).toBe(operatorEnv.ADMIN_TOKEN);
      expect(config.jwtSecrets).toEqual([operatorEnv.JWT_SECRET]);
      expect(services[name].stop_grace_period).toMatch(/^(1[0-9]|[2-9][0-9])s$/);
    }
  });

  it('refuses to start with the placeholders of .env.example, and generates the JWT secret it leaves empty', () => {
    const placeholders = Object.fromEntries(envExample);
    expect(() => containerConfig(services['agent-auth'], { ...operatorEnv, ADMIN_TOKEN: placeholders.ADMIN_TOKEN })).toThrow(/ADMIN_TOKEN/);
    expect(() => containerConfig(services['agent-auth'], { JWT_SECRET: operatorEnv.JWT_SECRET })).toThrow(/required/);
    // Empty means unset: no configured secret, so the server keeps a generated one in PostgreSQL.
    expect(placeholders.JWT_SECRET).toBe('');
    expect(containerConfig(services['agent-auth'], { ...operatorEnv, JWT_SECRET: placeholders.JWT_SECRET }).jwtSecrets).toEqual([]);
    // What the file says about each value matches what it holds: no "leave empty" above a placeholder.
    expect(read('.env.example')).not.toMatch(/[Ll]eave (it )?empty[^\n]*\n[A-Z_]+=CHANGE_ME/);
  });

  it('has a "scale" profile: two replicas behind the lb, whose public URL is their issuer, sharing Redis', () => {
    const replicas = Object.entries(services).filter(([, s]) => s.profiles?.includes('scale') && s.build === '.');
    expect(replicas.map(([name]) => name).sort()).toEqual(['agent-auth-1', 'agent-auth-2']);
    const lb = services.lb;
    expect(lb.profiles).toEqual(['scale']);
    expect(lb.image).toMatch(/^(nginx:1\.27-alpine|caddy:2)/);
    expect(lb.depends_on).toEqual({
      'agent-auth-1': { condition: 'service_healthy' },
      'agent-auth-2': { condition: 'service_healthy' },
    });
    const [hostPort] = lb.ports[0].split(':');
    for (const [name, replica] of replicas) {
      const config = containerConfig(replica, operatorEnv);
      expect(config.issuer, name).toBe(`http://localhost:${hostPort}`);
      expect(config.trustProxy, name).toBe(true);
      // Reached only through the lb.
      expect(replica.ports, name).toBeUndefined();
      // Rate-limit counters are shared, or each replica would allow the full limit.
      const redis = new URL(replica.environment.REDIS_URL);
      expect(services[redis.hostname]?.profiles, name).toEqual(['scale']);
      expect(replica.depends_on[redis.hostname], name).toEqual({ condition: 'service_healthy' });
      expect(replica.depends_on.postgres, name).toEqual({ condition: 'service_healthy' });
    }
  });

  it('mounts an nginx config that round-robins to both replicas with X-Forwarded-* headers', () => {
    const mount = services.lb.volumes.find((v: string) => v.startsWith('./deploy/'));
    const [file, target] = mount.split(':');
    expect(target).toBe('/etc/nginx/conf.d/default.conf');
    const conf = read(file);
    const upstream = /upstream\s+(\w+)\s*\{([^}]*)\}/.exec(conf)!;
    expect(upstream[2]).toMatch(/server\s+agent-auth-1:3000;/);
    expect(upstream[2]).toMatch(/server\s+agent-auth-2:3000;/);
    // No balancing directive (ip_hash, least_conn, ...) means round-robin.
    expect(upstream[2]).not.toMatch(/\b(ip_hash|hash|least_conn|random)\b/);
    expect(conf).toContain(`proxy_pass http://${upstream[1]};`);
    for (const header of ['X-Forwarded-For', 'X-Forwarded-Proto', 'X-Forwarded-Host']) {
      expect(conf).toMatch(new RegExp(`proxy_set_header\\s+${header}\\s+\\$`));
    }
    // As the edge, the lb replaces what the client sent, so the client cannot choose its own IP.
    expect(conf).toMatch(/proxy_set_header\s+X-Forwarded-For\s+\$remote_addr;/);
  });

  it('documents in .env.example every variable the compose file substitutes', () => {
    const used = new Set([...composeText.matchAll(/\$\{([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]));
    expect(used.size).toBeGreaterThan(0);
    for (const name of used) expect(envExample.has(name), name).toBe(true);
    expect(read('.env.example')).toContain('openssl rand -base64 48');
  });
});

// ---------------------------------------------------------------- docs/operations.md

describe('docs/operations.md', () => {
  it('documents every environment variable that src/config.ts reads', () => {
    const schema = /const envSchema = z\.object\(\{([\s\S]*?)\n\}\);/.exec(read('src/config.ts'))![1];
    const variables = [...schema.matchAll(/^ {2}([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]);
    expect(variables).toEqual(expect.arrayContaining(['PORT', 'DATABASE_URL', 'JWT_SECRETS', 'TRUST_PROXY']));
    const docs = read('docs/operations.md');
    for (const name of variables) expect(docs, name).toContain(`| \`${name}\` |`);
  });
});

// ---------------------------------------------------------------- the image's start-up, without Docker

const execFileP = promisify(execFile);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** The image's CMD, as the container would run it. */
function runImageCommand(cwd: string, env: Record<string, string>): Started {
  const [, ...args] = JSON.parse(runtimeOps('CMD').at(-1)!.args) as string[];
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Polls `url` until it answers 200; fails early when the server process has exited. */
async function waitFor200(url: string, server: Started, timeoutMs = 60_000): Promise<void> {
  let exited = false;
  void server.exited.then(() => (exited = true));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exited) throw new Error(`server exited before ${url} answered:\n${server.output()}`);
    const status = await fetch(url).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms:\n${server.output()}`);
}

describe(`the image's start-up sequence without Docker (${storeName})`, () => {
  let work: string;
  let app: string;
  let database: TestDatabase;
  let env: Record<string, string>;
  let running: Started | undefined;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'agent-auth-image-'));
    // The build stage: the build context (the repository less .dockerignore), its RUN steps
    // (npm ci aside: the repository's node_modules stand in for it).
    const build = join(work, 'build');
    cpSync(root, build, {
      recursive: true,
      filter: (source) => source === root || !ignoredByDocker(relative(root, source).split(sep)[0]),
    });
    symlinkSync(join(root, 'node_modules'), join(build, 'node_modules'), 'dir');
    for (const { args } of buildStage.filter((i) => i.op === 'RUN' && !/^npm ci\b/.test(i.args))) {
      await execFileP('sh', ['-c', args], { cwd: build }).catch((err: { stdout: string; stderr: string }) => {
        throw new Error(`the build stage's \`${args}\` failed, as the image build would:\n${err.stdout}${err.stderr}`);
      });
    }
    // The runtime stage: /app holds exactly the paths it copies.
    app = join(work, 'app');
    mkdirSync(app);
    for (const path of imageFiles) {
      if (path === 'node_modules') symlinkSync(join(root, path), join(app, path), 'dir');
      else cpSync(join(build, path), join(app, path), { recursive: true });
    }
    database = await createTestDatabase();
    const [port, adminPort] = [await freePort(), await freePort()];
    // The image's ENV plus what an operator sets; nothing leaks in from the test's own environment.
    env = {
      PATH: process.env.PATH ?? '',
      NODE_ENV: 'production',
      DATA_DIR: join(work, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      LOG_LEVEL: 'warn',
      ...(database.url ? { DATABASE_URL: database.url } : {}),
    };
  }, 180_000);

  afterAll(async () => {
    if (running && running.child.exitCode === null) running.child.kill('SIGKILL');
    await database?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const base = () => `http://127.0.0.1:${env.PORT}`;
  const adminBase = () => `http://127.0.0.1:${env.ADMIN_PORT}`;

  async function stopWithSigterm(server: Started) {
    const started = Date.now();
    server.child.kill('SIGTERM');
    const code = await Promise.race([server.exited, new Promise((r) => setTimeout(() => r('timeout'), 12_000))]);
    expect(code, server.output()).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  }

  it('needs at run time only packages that the production install keeps', () => {
    const { dependencies } = JSON.parse(read('package.json')) as { dependencies: Record<string, string> };
    const files = readdirSync(join(app, 'dist'), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.js'));
    expect(files).toContain('main.js');
    // Static imports and re-exports, side-effect imports, dynamic imports (not prose in comments).
    const importSpecifier = /^\s*(?:(?:import|export)\s[^;]*?\sfrom|import)\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;
    const packages = new Set(
      files.flatMap((f) =>
        [...readFileSync(join(app, 'dist', f), 'utf8').matchAll(importSpecifier)]
          .map((m) => m[1] ?? m[2])
          .filter((spec) => !spec.startsWith('.') && !spec.startsWith('node:') && !builtinModules.includes(spec))
          .map((spec) =>
            spec
              .split('/')
              .slice(0, spec.startsWith('@') ? 2 : 1)
              .join('/'),
          ),
      ),
    );
    expect(packages).toContain('fastify');
    for (const name of packages) expect(Object.keys(dependencies), name).toContain(name);
  });

  it('migrates, answers /healthz and /readyz, and exits 0 on SIGTERM within 10 s', async () => {
    running = runImageCommand(app, env);
    // A new embedded store is created on this first start: on a 2-core machine running two other test
    // passes it has taken over a minute.
    await waitFor200(`${base()}/healthz`, running, FIRST_START_MS);
    const ready = await fetch(`${base()}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok' });

    // Without ADMIN_TOKEN the server keeps a generated one in DATA_DIR, readable by its owner only.
    const tokenFile = join(env.DATA_DIR, 'admin-token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();
    expect((await fetch(`${adminBase()}/admin/clients`)).status).toBe(401);
    const listed = await fetch(`${adminBase()}/admin/clients`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.status).toBe(200);

    // The image's and the compose file's health checks, run as Docker runs them, on this PORT.
    const probes = [runtimeOps('HEALTHCHECK')[0].args.replace(/^.*?CMD /, ''), services['agent-auth'].healthcheck.test.slice(1).join(' ')];
    for (const probe of probes) {
      const [, script] = /^node -e "?(.*?)"?$/.exec(probe)!;
      await expect(execFileP(process.execPath, ['-e', script], { env: { PORT: env.PORT } })).resolves.toBeDefined();
      await expect(execFileP(process.execPath, ['-e', script], { env: { PORT: String(await freePort()) } })).rejects.toMatchObject({ code: 1 });
    }

    await stopWithSigterm(running);
    expect(running.output()).toContain('SIGTERM received');
  }, 200_000);

  it('starts again on the same data, as a restarted container does', async () => {
    const token = readFileSync(join(env.DATA_DIR, 'admin-token'), 'utf8').trim();
    running = runImageCommand(app, env);
    await waitFor200(`${base()}/readyz`, running, 120_000);
    const listed = await fetch(`${adminBase()}/admin/clients`, { headers: { authorization: `Bearer ${token}` } });
    expect(listed.status).toBe(200);
    await stopWithSigterm(running);
  }, 150_000);
});
