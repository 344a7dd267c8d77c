import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { finished, repoRoot, spawnBuilt } from '../helpers/process.js';
import { ADMIN_TOKEN } from '../helpers/server.js';

const README = readFileSync(join(repoRoot, 'README.md'), 'utf8');
const start = README.indexOf('## Signed agent requests');
const SECTION = README.slice(start, README.indexOf('\n## ', start + 3));
/** The README section's fenced blocks of `language`, in order. */
const blocks = (language: string) => [...SECTION.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);

const TSX = join(repoRoot, 'node_modules/tsx/dist/cli.mjs');

// The README's lines and code, run as written: the CLI makes the key, the website block serves, and
// each SDK's block fetches it signed; the website names the agent.
describe(`the README's "Signed agent requests", run as written`, { timeout: 180_000 }, () => {
  let server: ListeningServer;
  let adminUrl: string;
  let dir: string;
  let website: ChildProcess | undefined;

  beforeAll(async () => {
    server = await startListeningServer();
    adminUrl = await server.admin.listen({ port: 0, host: '127.0.0.1' });
    // Inside the repository, so that the blocks' imports resolve as in a checkout.
    dir = mkdtempSync(join(repoRoot, 'test/web-bot-auth/.readme-'));
  });
  afterAll(async () => {
    website?.kill();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A README block as a module file of `dir`, run with tsx (top-level await needs a module). */
  const tsFile = (name: string, code: string) => {
    const file = join(dir, name);
    writeFileSync(file, code);
    return file;
  };

  it('registers a key, and a website built from the README names the agent that signed from TypeScript and Python', async () => {
    const agent = await server.createAgent();
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { name: 'README agent' });
    const [shell] = blocks('sh');
    const lines = shell
      .split('\n')
      .filter((line) => line.startsWith('npx agent-auth '))
      .map((line) => line.replace(/\s+#.*$/, ''));
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      const args = line.replace('npx agent-auth ', '').replace('agent_…', agent.agent_id).split(' ');
      const res = await finished(
        spawnBuilt('cli', ['--url', adminUrl, ...args.map((a) => (a === 'signing-key.jwk' ? join(dir, a) : a))], { ADMIN_TOKEN }),
      );
      expect(res.code, res.stderr).toBe(0);
    }

    const [agentTs, websiteTs] = blocks('ts');
    const [python] = blocks('python');
    const port = await freePort();
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      AGENT_AUTH_URL: server.issuer,
      SIGNING_KEY_FILE: join(dir, 'signing-key.jwk'),
      WEBSITE_URL: `http://127.0.0.1:${port}/`,
      PORT: String(port),
    };
    website = spawn(process.execPath, [TSX, tsFile('website.mts', websiteTs)], { cwd: repoRoot, env, stdio: 'ignore' });
    // The website is up once it answers (unsigned, at first).
    let unsigned = '';
    for (let i = 0; i < 200 && !unsigned; i++) {
      unsigned = await fetch(env.WEBSITE_URL).then(
        (r) => r.text(),
        () => new Promise<string>((resolve) => setTimeout(() => resolve(''), 100)),
      );
    }
    expect(unsigned).toBe('not signed by an agent: missing_signature\n');

    const tsRun = await finished(spawn(process.execPath, [TSX, tsFile('agent.mts', agentTs)], { cwd: repoRoot, env }));
    expect(tsRun.code, tsRun.stderr).toBe(0);
    expect(tsRun.stdout).toBe('signed by agent README agent (owner not verified)\n\n');

    const pyRun = await finished(
      spawn(process.env.PYTHON ?? 'python3', ['-c', python], {
        cwd: repoRoot,
        env: { ...env, PYTHONPATH: 'sdk/python', PYTHONDONTWRITEBYTECODE: '1' },
      }),
    );
    expect(pyRun.code, pyRun.stderr).toBe(0);
    expect(pyRun.stdout).toBe('signed by agent README agent (owner not verified)\n\n');
  });
});
