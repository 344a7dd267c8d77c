import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from './helpers/database.js';
import { startLocalServer } from './helpers/listening.js';

/** The shell block of the README's "Sign in by hand" section, exactly as a newcomer would paste it. */
function walkthrough(): string {
  const readme = readFileSync('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('## Sign in by hand'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README has no shell block under "Sign in by hand"');
  return block[1];
}

describe(`the README's sign-in by hand (${storeName})`, { timeout: 120_000 }, () => {
  let local: Awaited<ReturnType<typeof startLocalServer>>;

  beforeAll(async () => {
    // No ADMIN_TOKEN: the server writes one under DATA_DIR, as `npm start` does on a fresh machine.
    local = await startLocalServer();
  });
  afterAll(() => local?.stop());

  it('runs pasted into bash and ends with the refresh token revoked', async () => {
    // Only the addresses differ from the README: the test's server listens on free ports.
    const script = walkthrough()
      .replaceAll('http://localhost:3000', local.server.url)
      .replaceAll('http://127.0.0.1:3001', local.server.adminUrl)
      .replace('cat data/admin-token', `cat ${join(local.dataDir, 'admin-token')}`);
    const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], { cwd: local.dataDir });
    const lines = stdout.trim().split('\n');
    expect(JSON.parse(lines[0])).toMatchObject({ status: 'authenticated' });
    expect(JSON.parse(lines[1])).toEqual({ status: 'authenticated' });
    expect(lines[2]).toMatch(/^http:\/\/localhost:8080\/callback\?code=[^&]+&state=xyz123&iss=/);
    expect(JSON.parse(lines[3])).toEqual({ sub: expect.stringMatching(/^agent_/), email: 'owner@example.com' });
    expect(JSON.parse(lines[4])).toEqual({});
    expect(JSON.parse(lines[5])).toEqual({ active: false });
  });
});
