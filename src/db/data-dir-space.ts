import { existsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

const MB = 1024 * 1024;

export const megabytes = (bytes: number) => Math.floor(bytes / MB);

/** Bytes free to an ordinary writer on the filesystem that holds `dir` (or its nearest existing parent). */
export async function freeBytes(dir: string): Promise<number> {
  let at = resolve(dir);
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at);
  const { bavail, bsize } = await statfs(at);
  return bavail * bsize;
}

/**
 * Refuses to open the embedded store on a disk with less than `minFreeMb` free: PGlite would fail
 * there with nothing better than `Aborted()` (a full disk at restart) or a bare errno (a new store).
 */
export async function checkFreeSpace(dir: string, minFreeMb: number): Promise<void> {
  if (minFreeMb === 0) return;
  const free = await freeBytes(dir);
  if (free < minFreeMb * MB) {
    throw new Error(
      `DATA_DIR ${dir} is on a disk with ${megabytes(free)} MB free; the embedded store needs at least ${minFreeMb} MB free to start ` +
        '(DATA_DIR_MIN_FREE_MB): free some space, or move DATA_DIR to a larger disk',
    );
  }
}

// PGlite's engine is WebAssembly: a failed write surfaces as an abort of the whole engine, or as an
// Emscripten errno object (no message; 51 is ENOSPC there).
const ENGINE_ABORT = /^Aborted\(/;
const EMSCRIPTEN_ENOSPC = 51;

/**
 * What a write to a full disk failed with, in words (Node's ENOSPC, or the embedded engine failing as
 * it does then); undefined for any other error.
 */
export function diskFullFailure(err: unknown): string | undefined {
  if (err instanceof Error) {
    if (ENGINE_ABORT.test(err.message)) return 'the database engine aborted';
    return (err as NodeJS.ErrnoException).code === 'ENOSPC' ? err.message : undefined;
  }
  const errno = typeof err === 'object' && err !== null ? (err as { errno?: unknown }).errno : undefined;
  return errno === EMSCRIPTEN_ENOSPC ? 'the database engine: no space left on device' : undefined;
}
