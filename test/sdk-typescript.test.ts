import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/process.js';

const run = promisify(execFile);
const SDK = join(repoRoot, 'sdk/typescript');

/** Bytes under `dir`, symbolic links followed (a linked install weighs what it points to). */
async function weight(dir: string): Promise<number> {
  const { stdout } = await run('du', ['-sbL', dir]);
  return Number(stdout.split('\t')[0]);
}

/** An empty ES module project that installs `spec` and nothing else. */
async function projectWith(root: string, name: string, spec: string) {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  await run('npm', ['install', '--no-audit', '--no-fund', spec], { cwd: dir });
  return dir;
}

// A consumer as an agent's author writes one: typed against the installed declarations, run by plain node.
const consumer = `import { AgentAuthClient, findRequestId, RequestNotFoundError, type SignInStatus } from '@agent-auth/agent';
import { MAX_WAIT_SECONDS } from '@agent-auth/agent/protocol';
const status: SignInStatus = 'pending';
const client = new AgentAuthClient({ baseUrl: 'http://127.0.0.1:9', agentId: 'a', agentSecret: 's', model: 'm' });
console.log(JSON.stringify({ status, wait: MAX_WAIT_SECONDS, id: findRequestId('<meta name="request-id" content="req_1">'),
  client: client.baseUrl, typed: new RequestNotFoundError('not_found', 'x') instanceof Error }));
`;

describe('the agent SDK package (sdk/typescript) on its own', { timeout: 120_000 }, () => {
  let root: string;
  let tarball: string;
  let packed: { size: number; unpackedSize: number; files: { path: string }[] };

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'agent-auth-sdk-'));
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', root], { cwd: SDK });
    [packed] = JSON.parse(stdout.slice(stdout.indexOf('[')));
    tarball = join(root, 'agent-auth-agent-0.1.0.tgz');
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('packs into a tarball of kilobytes: the built code, its types, the README and nothing else', () => {
    const files = packed.files.map((f) => f.path).sort();
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files).toContain('dist/mcp.js');
    expect(files).toContain('README.md');
    expect(files.filter((f) => !/^dist\/[\w-]+\.(js|d\.ts)$/.test(f))).toEqual(['README.md', 'package.json']);
    // With the MCP entry point (`@agent-auth/agent/mcp`), the headless sign-in and request signing (Web Bot Auth):
    // about 26 kB, 85 kB unpacked.
    expect(packed.size).toBeLessThan(30_000);
    expect(packed.unpackedSize).toBeLessThan(100_000);
    console.info(`@agent-auth/agent: ${packed.files.length} files, ${packed.size} bytes packed, ${packed.unpackedSize} unpacked`);
  });

  for (const [how, spec] of [
    ['the tarball', () => tarball],
    ['the folder', () => SDK],
  ] as const) {
    it(`installs from ${how} as one package of kilobytes, typed, and runs under plain node`, async () => {
      const dir = await projectWith(root, how.replace(/\W/g, '-'), spec());
      const lock = JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8'));
      // One package, whatever its install brings along: no server, no database, no browser.
      expect(Object.keys(lock.packages).filter((p) => p.startsWith('node_modules/'))).toEqual(['node_modules/@agent-auth/agent']);
      const size = await weight(join(dir, 'node_modules'));
      console.info(`npm install ${how}: node_modules weighs ${size} bytes`);
      expect(size).toBeLessThan(300_000);

      writeFileSync(join(dir, 'agent.ts'), consumer);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'NodeNext',
            target: 'ES2022',
            strict: true,
            noEmit: true,
            types: ['node'],
            typeRoots: [join(repoRoot, 'node_modules/@types')],
          },
        }),
      );
      await run(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', dir]);
      writeFileSync(join(dir, 'agent.mjs'), consumer.replace(', type SignInStatus', '').replace(': SignInStatus', ''));
      const { stdout } = await run(process.execPath, ['agent.mjs'], { cwd: dir });
      expect(JSON.parse(stdout)).toEqual({ status: 'pending', wait: 25, id: 'req_1', client: 'http://127.0.0.1:9', typed: true });
    });
  }
});
