import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { freePort, type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { finished, repoRoot } from '../helpers/process.js';

/** The TypeScript blocks of the README's "MCP servers" section: the MCP server's, then the agent's. */
function readmeBlocks(): [server: string, agent: string] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const start = readme.indexOf('## MCP servers\n');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  if (blocks.length !== 2) throw new Error(`the README's "MCP servers" section has ${blocks.length} TypeScript blocks, not 2`);
  return [blocks[0], blocks[1]];
}

/** `npx tsx file` from the checkout (where the packages resolve), with a clean environment plus `env`. */
function runTsx(file: string, env: Record<string, string>): ChildProcess {
  return spawn(join(repoRoot, 'node_modules/.bin/tsx'), [file], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

describe(`the README's MCP server and agent, run as written (${storeName})`, { timeout: 120_000 }, () => {
  let server: ListeningServer;
  let dir: string;
  let mcpServer: ChildProcess | undefined;

  beforeAll(async () => {
    server = await startListeningServer();
    // In the checkout, so that the packages and tsconfig.json's paths resolve as for the examples.
    dir = mkdtempSync(join(repoRoot, '.readme-mcp-'));
  });
  afterAll(async () => {
    mcpServer?.kill();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the agent calls the server's tool and learns who it is", async () => {
    const [serverCode, agentCode] = readmeBlocks();
    writeFileSync(join(dir, 'mcp-server.ts'), serverCode);
    writeFileSync(join(dir, 'mcp-agent.ts'), agentCode);
    const port = await freePort();
    const mcpUrl = `http://localhost:${port}/mcp`;
    expect((await server.adminCall('POST', '/admin/resources', { resource: mcpUrl, name: 'Notes', scopes: ['email'] })).statusCode).toBe(201);

    mcpServer = runTsx(join(dir, 'mcp-server.ts'), { ISSUER: server.issuer, PORT: String(port) });
    const serverExit = finished(mcpServer);
    await expect
      .poll(async () => (await fetch(`http://localhost:${port}/.well-known/oauth-protected-resource/mcp`).catch(() => undefined))?.status, {
        timeout: 60_000,
        interval: 250,
      })
      .toBe(200);

    const agent = await server.createAgent();
    const run = await finished(
      runTsx(join(dir, 'mcp-agent.ts'), {
        AGENT_AUTH_URL: server.issuer,
        AGENT_ID: agent.agent_id,
        AGENT_SECRET: agent.agent_secret,
        MCP_URL: mcpUrl,
      }),
    );
    expect({ code: run.code, stderr: run.stderr, stdout: run.stdout }).toEqual({
      code: 0,
      stderr: '',
      stdout: `agent ${agent.agent_id} of ${agent.email}\n`,
    });
    mcpServer.kill();
    await serverExit;
  });
});
