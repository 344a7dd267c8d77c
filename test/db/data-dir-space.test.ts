import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diskFullFailure } from '../../src/db/data-dir-space.js';
import { finished, spawnBuilt, startServerProcess } from '../helpers/process.js';

const ADMIN_TOKEN = 'data-dir-space-admin-token-0123456789';

/** The start of the real entry point, to its exit: code and what it wrote. */
const start = (env: Record<string, string>) =>
  finished(spawnBuilt('main', [], { PORT: '0', ADMIN_PORT: '0', ADMIN_TOKEN, LOG_LEVEL: 'warn', ...env }));

/** One line on stderr, readable: no stack trace, no `[object Object]`, no bare engine abort. */
function expectOneReadableLine(stderr: string) {
  const lines = stderr.trim().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^agent-auth: failed to start: /);
  expect(lines[0]).not.toMatch(/\[object Object\]|^\s+at |Aborted\(\)|-sASSERTIONS/);
  return lines[0];
}

// The embedded store on a disk too small for it (docs/operations.md, "Disk space"): a 20 MB tmpfs,
// as the chaos run had. Mounting needs root, which the test machines give.
describe('the embedded store on a small disk', { timeout: 120_000 }, () => {
  const root = mkdtempSync(join(tmpdir(), 'agent-auth-disk-'));
  const small = join(root, 'small');
  let mounted = false;

  beforeAll(() => {
    execFileSync('mkdir', ['-p', small]);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=20m', 'tmpfs', small]);
    mounted = true;
  });
  afterAll(() => {
    if (mounted) execFileSync('umount', [small]);
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses to start with one line saying how much is free and how much is needed; it writes nothing there', async () => {
    const dataDir = join(small, 'data');
    const res = await start({ DATA_DIR: dataDir });
    expect(res.code).toBe(1);
    const line = expectOneReadableLine(res.stderr);
    expect(line).toMatch(
      new RegExp(
        `^agent-auth: failed to start: DATA_DIR ${dataDir} is on a disk with (19|20) MB free; the embedded store needs at least 64 MB free to start \\(DATA_DIR_MIN_FREE_MB\\)`,
      ),
    );
    expect(existsSync(join(dataDir, 'pglite'))).toBe(false);
  });

  it('with the check off, the engine failing on the full disk is still one readable line naming DATA_DIR and the disk', async () => {
    const dataDir = join(small, 'unchecked');
    const res = await start({ DATA_DIR: dataDir, DATA_DIR_MIN_FREE_MB: '0' });
    expect(res.code).toBe(1);
    const line = expectOneReadableLine(res.stderr);
    expect(line).toContain(`the embedded store in DATA_DIR ${dataDir} could not write`);
    expect(line).toMatch(/its disk is most likely full \(\d+ MB free; it needs at least 64 MB, DATA_DIR_MIN_FREE_MB\)$/);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('names the engine’s bare abort for what it most likely is', () => {
    expect(diskFullFailure(new Error('Aborted(). Build with -sASSERTIONS for more info.'))).toBe('the database engine aborted');
    expect(diskFullFailure({ name: 'ErrnoError', errno: 51 })).toBe('the database engine: no space left on device');
    expect(diskFullFailure(new Error('connection refused'))).toBeUndefined();
  });

  it('warns while running once the disk is low, and exports its free bytes', async () => {
    const dataDir = join(root, 'roomy');
    // Any real disk is "low" against a threshold of a petabyte.
    const server = await startServerProcess({ DATA_DIR: dataDir, PORT: '0', ADMIN_PORT: '0', ADMIN_TOKEN, DATA_DIR_LOW_FREE_MB: '1000000000' });
    try {
      const metrics = await (await fetch(`${server.adminUrl}/metrics`)).text();
      const free = Number(/^agent_auth_data_dir_free_bytes (\d+(?:\.\d+)?(?:e\+\d+)?)$/m.exec(metrics)?.[1]);
      expect(free).toBeGreaterThan(0);
    } finally {
      server.child.kill('SIGTERM');
    }
    const { code, stdout } = await server.exit;
    expect(code).toBe(0);
    const warning = stdout.split('\n').find((line) => line.includes('DATA_DIR is running out of disk space'));
    expect(JSON.parse(warning!)).toMatchObject({ level: 40, data_dir: dataDir, low_mb: 1000000000 });
  });
});
