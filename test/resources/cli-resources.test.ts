import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server.js';
import { storeName } from '../helpers/database.js';
import { startLocalServer } from '../helpers/listening.js';
import { finished, spawnBuilt } from '../helpers/process.js';

describe(`agent-auth resources (${storeName})`, { timeout: 120_000 }, () => {
  let local: Awaited<ReturnType<typeof startLocalServer>>;
  let server: RunningServer;
  let token: string;

  beforeAll(async () => {
    local = await startLocalServer();
    server = local.server;
    token = readFileSync(join(local.dataDir, 'admin-token'), 'utf8').trim();
  });
  afterAll(() => local?.stop());

  const cli = (args: string[]) => finished(spawnBuilt('cli', ['--url', server.adminUrl, ...args], { ADMIN_TOKEN: token }));

  it('adds, lists and removes a resource; a trailing slash names the same one', async () => {
    const added = await cli(['--json', 'resources', 'add', 'https://mcp.example.com/', '--name', 'Notes MCP', '--scope', 'notes:read']);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ resource: 'https://mcp.example.com', name: 'Notes MCP', scopes: ['notes:read'] });

    const table = await cli(['resources', 'list']);
    expect(table.stdout).toMatch(/https:\/\/mcp\.example\.com\s+Notes MCP\s+notes:read/);

    const again = await cli(['resources', 'add', 'https://mcp.example.com', '--name', 'Twice']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('is registered already');
    const bad = await cli(['resources', 'add', 'http://mcp.example.com', '--name', 'Plain']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('https');

    const removed = await cli(['resources', 'remove', 'https://mcp.example.com/']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain('removed https://mcp.example.com/');
    expect(JSON.parse((await cli(['--json', 'resources', 'list'])).stdout)).toEqual({ resources: [] });
    expect((await cli(['resources', 'remove', 'https://mcp.example.com'])).code).toBe(1);
  });
});
