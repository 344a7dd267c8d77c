import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeInChromium } from './helpers/chromium.js';
import { storeName } from './helpers/database.js';
import { freePort, type ListeningServer, startListeningServer } from './helpers/listening.js';
import { finished, repoRoot } from './helpers/process.js';

const QUICKSTART = { ts: 'examples/quickstart/agent.ts', python: 'examples/quickstart/agent.py' } as const;
const PYTHON = process.env.PYTHON ?? 'python3';

/** The fenced code block of `language` in the README's "Quick start" section. */
function readmeBlock(language: string): string {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('\n## ', readme.indexOf('## Quick start') + 1));
  const block = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(section);
  if (!block) throw new Error(`README's quick start has no ${language} block`);
  return block[1];
}

describe("the README's quick-start agents", () => {
  it('are the files examples/quickstart/agent.ts and agent.py, character for character', () => {
    expect(readmeBlock('ts')).toBe(readFileSync(QUICKSTART.ts, 'utf8'));
    expect(readmeBlock('python')).toBe(readFileSync(QUICKSTART.python, 'utf8'));
  });
});

/** Whether PYTHON can import Playwright for Python (CI installs it; PyPI's `playwright`). */
function pythonHasPlaywright(): boolean {
  try {
    execFileSync(PYTHON, ['-c', 'import playwright.sync_api'], { stdio: 'ignore' });
    return true;
  } catch {
    console.warn(`the Python quick-start agent: skipped, ${PYTHON} cannot import playwright (pip install playwright)`);
    return false;
  }
}

/** A process with a clean environment plus `env`, in the repository. */
function run(command: string, args: string[], env: Record<string, string>): ChildProcess {
  return spawn(command, args, {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PYTHONDONTWRITEBYTECODE: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

describeInChromium('the quick-start agents')(
  `the quick-start agents, run as they are against agent-auth and the example website (${storeName})`,
  () => {
    let server: ListeningServer;
    let website: ChildProcess;
    let websiteUrl: string;
    let agent: { agent_id: string; agent_secret: string };

    beforeAll(async () => {
      server = await startListeningServer();
      const port = await freePort();
      websiteUrl = `http://localhost:${port}`;
      const client = await server.createClient([`${websiteUrl}/callback`]);
      agent = await server.createAgent('you@example.com');
      // The example website as its run command starts it (npm run example:website).
      website = run(process.execPath, ['--import', 'tsx', 'examples/website/server.ts'], {
        ISSUER: server.issuer,
        CLIENT_ID: client.client_id,
        CLIENT_SECRET: client.client_secret,
        PORT: String(port),
      });
      await new Promise<void>((resolve, reject) => {
        let out = '';
        website.stdout!.on('data', (d) => (out += d) && out.includes('Example shop on') && resolve());
        website.on('exit', (code) => reject(new Error(`the example website exited (${code}) before it listened: ${out}`)));
      });
    }, 60_000);
    afterAll(async () => {
      website?.kill('SIGTERM');
      await server?.close();
    });

    const env = () => ({ AGENT_ID: agent.agent_id, AGENT_SECRET: agent.agent_secret, AGENT_AUTH_URL: server.issuer, WEBSITE_URL: websiteUrl });

    it('TypeScript: clicks the link, signs in, is back on the website signed in, closes the browser and exits 0', { timeout: 120_000 }, async () => {
      const result = await finished(run(process.execPath, ['--import', 'tsx', QUICKSTART.ts], env()));
      expect(result, result.stderr).toMatchObject({ code: 0, signal: null });
      expect(result.stdout).toContain(`Back on ${websiteUrl}/: Example shop`);
      expect(result.stdout).toContain('Signed in as you@example.com');
    });

    it('TypeScript in a project made with `npm init -y` (CommonJS, where top-level await is refused): the same', { timeout: 120_000 }, async () => {
      const project = mkdtempSync(join(tmpdir(), 'agent-auth-cjs-'));
      try {
        execFileSync('npm', ['init', '-y'], { cwd: project, stdio: 'ignore' });
        expect(JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')).type ?? 'commonjs').toBe('commonjs');
        copyFileSync(QUICKSTART.ts, join(project, 'agent.ts'));
        // The packages as `npm install` would give them to that project: this checkout's (NODE_PATH serves require).
        const tsx = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;
        const child = spawn(process.execPath, ['--import', tsx, 'agent.ts'], {
          cwd: project,
          env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_PATH: join(repoRoot, 'node_modules'), ...env() },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const result = await finished(child);
        expect(result, result.stderr).toMatchObject({ code: 0, signal: null });
        expect(result.stdout).toContain('Signed in as you@example.com');
      } finally {
        rmSync(project, { recursive: true, force: true });
      }
    });

    it.runIf(pythonHasPlaywright())('Python: the same, with the Python SDK', { timeout: 120_000 }, async () => {
      const result = await finished(run(PYTHON, [QUICKSTART.python], { ...env(), PYTHONPATH: 'sdk/python' }));
      expect(result, result.stderr).toMatchObject({ code: 0, signal: null });
      expect(result.stdout).toContain(`Back on ${websiteUrl}/: Example shop`);
      expect(result.stdout).toContain('Signed in as you@example.com');
    });
  },
);
