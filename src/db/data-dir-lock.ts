import { existsSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The file in DATA_DIR that names the process using the embedded store there. */
const LOCK_FILE = 'agent-auth.lock';

/** Whether a process with this pid exists (EPERM: it does, under another user). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Makes this process the only one using the embedded store in `dataDir`: two processes writing one
 * PGlite directory lose each other's writes. The lock is a file created exclusively, holding our
 * pid; one left by a process that no longer runs (killed, crashed) is taken over. Returns the
 * function that releases it.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, LOCK_FILE);
  const holder = () => Number.parseInt(readFileSync(file, 'utf8'), 10);
  for (;;) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' });
      return () => {
        // Unless someone removed it by hand (and another process may have taken it since).
        if (existsSync(file) && holder() === process.pid) unlinkSync(file);
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const pid = holder();
    // A container restarted with the same pid (1, typically) finds its own stale lock.
    if (pid > 0 && pid !== process.pid && isRunning(pid)) {
      throw new Error(`DATA_DIR ${dataDir} is in use by another agent-auth process (pid ${pid}); stop it, or use DATABASE_URL to run several`);
    }
    unlinkSync(file);
  }
}
