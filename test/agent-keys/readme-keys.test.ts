import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { startAuthorize } from '../helpers/flow.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { finished, repoRoot, spawnBuilt } from '../helpers/process.js';
import { ADMIN_TOKEN } from '../helpers/server.js';

const README = readFileSync(join(repoRoot, 'README.md'), 'utf8');
const start = README.indexOf('## Agents with keys');
const SECTION = README.slice(start, README.indexOf('\n## ', start + 3));
/** The README section's fenced blocks of `language`, in order. */
const blocks = (language: string) => [...SECTION.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]);

/** A process in the repository with a clean environment plus `env`. */
const run = (command: string, args: string[], env: Record<string, string>) =>
  finished(spawn(command, args, { cwd: repoRoot, env: { PATH: process.env.PATH, HOME: process.env.HOME, PYTHONDONTWRITEBYTECODE: '1', ...env } }));

// The README's lines and code, run as written: the CLI makes the key, each SDK's block builds the
// agent, and a line of ours has it authenticate a real sign-in.
describe(`the README's "Agents with keys", run as written (${storeName})`, { timeout: 180_000 }, () => {
  let server: ListeningServer;
  let adminUrl: string;
  let dir: string;
  let agentId: string;
  let client: { client_id: string; client_secret: string; redirect_uris: string[] };

  beforeAll(async () => {
    server = await startListeningServer();
    adminUrl = await server.admin.listen({ port: 0, host: '127.0.0.1' });
    dir = mkdtempSync(join(tmpdir(), 'readme-keys-'));
    client = await server.createClient();
    agentId = (await server.createAgent()).agent_id;
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('registers a key, makes the agent key-only, and signs in with it from TypeScript and Python', async () => {
    const [shell] = blocks('sh');
    const lines = shell
      .split('\n')
      .filter((line) => line.startsWith('npx agent-auth '))
      .map((line) => line.replace(/\s+#.*$/, ''));
    expect(lines).toHaveLength(3);
    for (const line of lines) {
      const args = line.replace('npx agent-auth ', '').replace('agent_…', agentId).split(' ');
      const res = await finished(
        spawnBuilt('cli', ['--url', adminUrl, ...args.map((a) => (a === 'agent-key.pem' ? join(dir, a) : a))], { ADMIN_TOKEN }),
      );
      expect(res.code, res.stderr).toBe(0);
    }
    expect((await server.adminCall('GET', `/admin/agents/${agentId}`)).json.secret_enabled).toBe(false);

    const env = { AGENT_AUTH_URL: server.issuer, AGENT_ID: agentId, AGENT_KEY_FILE: join(dir, 'agent-key.pem') };
    const [ts] = blocks('ts');
    const [python] = blocks('python');
    const tsRequest = (await startAuthorize(server, client)).requestId;
    const tsRun = await run(
      process.execPath,
      [
        join(repoRoot, 'node_modules/tsx/dist/cli.mjs'),
        '--eval',
        `${ts}\nagent.authenticate('${tsRequest}').then((answer) => console.log(JSON.stringify(answer)));`,
      ],
      env,
    );
    expect(tsRun.code, tsRun.stderr).toBe(0);
    expect(JSON.parse(tsRun.stdout)).toMatchObject({ status: 'authenticated', request_id: tsRequest });

    const pyRequest = (await startAuthorize(server, client)).requestId;
    const pyRun = await run(
      process.env.PYTHON ?? 'python3',
      ['-c', `${python}\nimport json\nprint(json.dumps(agent.authenticate('${pyRequest}')))`],
      {
        ...env,
        PYTHONPATH: 'sdk/python',
      },
    );
    expect(pyRun.code, pyRun.stderr).toBe(0);
    expect(JSON.parse(pyRun.stdout)).toMatchObject({ status: 'authenticated', request_id: pyRequest });
  });
});
