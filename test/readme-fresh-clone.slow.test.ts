import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium } from './helpers/chromium.js';
import { freePort } from './helpers/listening.js';
import { repoRoot } from './helpers/process.js';

// The README followed line by line in a fresh clone, as a newcomer would: the quick start (npm ci,
// npm start, the example website, the agent in TypeScript and in Python), every CLI line, and a
// second instance on the same PostgreSQL. Slow (npm ci, a Python virtual environment): not part of
// `npm test`; `npm run test:slow` runs it, once per CI run.
//
// The only liberty taken with the README: the ports it names are swapped for free ones (in the text,
// and through PORT and ADMIN_PORT where it relies on the defaults), and so is the database name.

const run = promisify(execFile);
const README = readFileSync(join(repoRoot, 'README.md'), 'utf8');
const POSTGRES = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The shell blocks of the README section that starts with `heading`. */
function shellBlocks(heading: string): string[] {
  const start = README.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README has no section ${heading}`);
  const section = README.slice(start, README.indexOf('\n## ', start + heading.length + 2));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}

const timings: Record<string, number> = {};

describe.runIf(hasChromium)('the README in a fresh clone, line by line', { timeout: 900_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-auth-fresh-'));
  const clone = join(dir, 'agent-auth');
  const running: ChildProcess[] = [];
  const database = `readme_${Date.now().toString(36)}`;
  let ports: Record<string, number>;
  let swap: (text: string) => string;

  /**
   * A block run by bash in the clone, in a process group of its own (npm, node and their children). At a lower
   * priority: this file runs beside the rest of the suite (.ci/run), whose files it would otherwise slow down.
   */
  function bash(script: string, env: Record<string, string> = {}) {
    const child = spawn('nice', ['-n', '10', 'bash', '-euo', 'pipefail', '-c', swap(script)], {
      cwd: clone,
      // PIP_RETRIES: where the package index is out of reach (packages come from a local mirror, say), pip
      // would retry it with back-off for every package, which took 40 s of the Python step.
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PIP_RETRIES: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exit = new Promise<number | null>((resolve) => child.on('exit', resolve));
    return { child, output: () => output, exit };
  }

  /** A block that keeps running (a server): resolves once its output says `ready`. */
  async function serve(name: string, script: string, ready: string, env: Record<string, string>) {
    const started = Date.now();
    const block = bash(script, env);
    running.push(block.child);
    await new Promise<void>((resolve, reject) => {
      block.child.stdout!.on('data', () => block.output().includes(ready) && resolve());
      void block.exit.then((code) => reject(new Error(`${name} exited (${code}):\n${block.output()}`)));
    });
    timings[name] = Date.now() - started;
    return block;
  }

  /** A block that ends: its output, once it exited 0. */
  async function finish(name: string, script: string, env: Record<string, string>) {
    const started = Date.now();
    const block = bash(script, env);
    const code = await block.exit;
    timings[name] = Date.now() - started;
    expect(code, `${name}:\n${block.output()}`).toBe(0);
    return block.output();
  }

  /** SIGTERM to the block's process group; what still runs 20 s later gets SIGKILL. */
  function stop(child: ChildProcess) {
    if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    process.kill(-child.pid!, 'SIGTERM');
    const kill = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), 20_000);
    return new Promise<void>((resolve) => child.on('exit', () => resolve(clearTimeout(kill))));
  }

  beforeAll(async () => {
    ports = {};
    for (const port of ['3000', '3001', '8080', '3100', '3101']) ports[port] = await freePort();
    swap = (text) =>
      text
        .replace(/\b(3000|3001|8080|3100|3101)\b/g, (port) => String(ports[port]))
        .replaceAll('/agent_auth', `/${database}`)
        .replace(/ agent_auth\b/g, ` ${database}`);
    await run('git', ['clone', '--quiet', repoRoot, clone]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(running.map(stop));
    console.info(
      `README in a fresh clone, seconds per step: ${JSON.stringify(Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, v / 1000])))}`,
    );
    // The clone holds node_modules and a Python virtual environment: on a busy disk, removing them
    // has taken over a minute.
    await rm(dir, { recursive: true, force: true });
  }, 300_000);

  const authUrl = () => `http://localhost:${ports['3000']}`;
  const websiteUrl = () => `http://localhost:${ports['8080']}`;
  // What the README's defaults stand for, on the test's ports.
  const defaults = () => ({ PORT: String(ports['3000']), ADMIN_PORT: String(ports['3001']) });

  let server: ReturnType<typeof bash>;

  it('quick start: terminal 1 installs, builds and starts agent-auth', async () => {
    const [terminal1] = shellBlocks('## Quick start');
    expect(terminal1).toMatch(/^# Terminal 1/);
    server = await serve('terminal 1 (npm ci, npm start)', terminal1, 'agent-auth ready', defaults());
    expect(server.output()).toContain('admin token  in data/admin-token (the CLI reads it from there)');
  });

  it('quick start: terminal 2 registers the example website and starts it', async () => {
    const [, terminal2] = shellBlocks('## Quick start');
    expect(terminal2).toMatch(/^# Terminal 2/);
    // The website's own PORT and the issuer the README's defaults name.
    await serve('terminal 2 (register, website)', terminal2, 'Example shop on', {
      ADMIN_PORT: String(ports['3001']),
      PORT: String(ports['8080']),
      ISSUER: authUrl(),
    });
  });

  const agentEnv = () => ({ ADMIN_PORT: String(ports['3001']), AGENT_AUTH_URL: authUrl(), WEBSITE_URL: websiteUrl() });

  it('quick start: terminal 3 registers an agent and signs it in to the website in TypeScript', async () => {
    const [, , terminal3] = shellBlocks('## Quick start');
    expect(terminal3).toMatch(/^# Terminal 3/);
    const output = await finish('terminal 3 (register, TypeScript agent)', terminal3, agentEnv());
    expect(output).toContain(`Back on ${websiteUrl()}/: Example shop`);
    expect(output).toContain('Signed in as you@example.com');
  });

  it('quick start: the same agent in Python, in a virtual environment', async () => {
    const [, , terminal3, python] = shellBlocks('## Quick start');
    expect(python).toContain('.venv/bin/python examples/quickstart/agent.py');
    // The agent's credentials, as terminal 3's first line set them there.
    const register = terminal3.split('\n').find((line) => line.startsWith('eval'))!;
    const output = await finish('Python (venv, pip, agent)', `${register}\n${python}`, agentEnv());
    expect(output).toContain('Signed in as you@example.com');
  });

  it('runs every agent-auth line of the README, the ids of what it registered put for client_…, agent_… and grant_…', async () => {
    const lines = [...README.matchAll(/```sh\n([\s\S]*?)```/g)]
      .flatMap((m) => m[1].split('\n'))
      .filter((line) => /^(eval "\$\()?npx agent-auth /.test(line))
      // The quick start's and the PostgreSQL section's lines run in their own tests. A logout URI needs
      // OpenID Connect mode, which the quick start's server is not in: test/cli.test.ts runs that line.
      .filter((line) => !/Example shop|My agent|--url http:\/\/127\.0\.0\.1:3101|--backchannel-logout-uri/.test(line))
      // What the README registers comes first (a stable sort): a section may use a client_… before the one that creates it.
      .sort((a, b) => Number(/ create /.test(b)) - Number(/ create /.test(a)));
    expect(lines.length).toBeGreaterThanOrEqual(15);
    const env = { ADMIN_PORT: String(ports['3001']) };
    const ids: Record<string, string> = {};
    const token = readFileSync(join(clone, 'data', 'admin-token'), 'utf8').trim();
    const started = Date.now();
    for (const line of lines) {
      const script = line.replace(/\b(client|agent|grant)_…/g, (placeholder) => ids[placeholder] ?? placeholder);
      expect(script, `no id yet for ${line}`).not.toMatch(/_…/);
      const output = await finish(`npx agent-auth: ${line.slice(0, 40)}`, script, env);
      // What `create` printed, for the lines after it.
      for (const [, kind, id] of output.matchAll(/^(client|agent)_id +(\S+)$/gm)) ids[`${kind}_…`] ??= id;
      if (ids['agent_…'] && !ids['grant_…']) ids['grant_…'] = await quickStartGrant(token);
    }
    timings['every CLI line (average)'] = (Date.now() - started) / lines.length;
  });

  /** A grant of the quick start's agent, for `grants revoke grant_…`. */
  async function quickStartGrant(token: string): Promise<string> {
    const admin = `http://127.0.0.1:${ports['3001']}/admin`;
    const headers = { authorization: `Bearer ${token}` };
    const { agents } = await (await fetch(`${admin}/agents`, { headers })).json();
    const mine = agents.find((a: { email: string }) => a.email === 'you@example.com');
    const { grants } = await (await fetch(`${admin}/agents/${mine.agent_id}/grants`, { headers })).json();
    return grants[0].grant_id;
  }

  it('PostgreSQL: a second instance on the same database takes the first one’s admin token', async () => {
    await Promise.all(running.splice(0).map(stop));
    const base = new URL(POSTGRES);
    const admin = new pg.Client({ connectionString: POSTGRES });
    await admin.connect().catch(() => {
      throw new Error(`no PostgreSQL at ${base.host} for the README's PostgreSQL section`);
    });
    const [create, first, second, check] = shellBlocks('## PostgreSQL').flatMap((block) => block.trim().split('\n'));
    try {
      await finish('createdb', create, {});
      await serve('first instance on PostgreSQL', first, 'agent-auth ready', defaults());
      const instance2 = await serve('second instance on PostgreSQL', second, 'agent-auth ready', {});
      expect(instance2.output()).toContain('generated by the first instance on this database');
      // The token the quick start's instance wrote to ./data opens the second instance's admin API
      // (a refusal would exit 1); the new database has no website yet.
      const output = await finish('CLI on the second instance', check, {});
      expect(output).toBe('(none)\n');
    } finally {
      await Promise.all(running.splice(0).map(stop));
      await admin.query(`DROP DATABASE IF EXISTS ${database}`);
      await admin.end();
    }
  });
});
