import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

// Variables of the developer's shell that would change what a child process does.
const INHERITED_OUT = ['ADMIN_TOKEN', 'ADMIN_PORT', 'AGENT_AUTH_ADMIN_URL', 'DATA_DIR', 'DATABASE_URL', 'PORT', 'JWT_SECRET', 'JWT_SECRETS'];

/**
 * Runs an entry point as `npm start` and `npx agent-auth` do, from dist/ (test/global-setup.ts brings it up
 * to date with the sources first), with a clean environment plus `env`.
 */
export function spawnBuilt(entry: 'main' | 'cli', args: string[], env: Record<string, string | undefined> = {}): ChildProcess {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !INHERITED_OUT.includes(k)));
  return spawn(process.execPath, [`dist/${entry}.js`, ...args], {
    cwd: repoRoot,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Collects a child's output until it exits. */
export function finished(child: ChildProcess): Promise<Finished> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => (stdout += d));
  child.stderr?.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  adminUrl: string;
  exit: Promise<Finished>;
}

/** Starts the server (dist/main.js) and resolves once it says where it listens. */
export async function startServerProcess(env: Record<string, string | undefined>): Promise<ServerProcess> {
  const child = spawnBuilt('main', [], env);
  const exit = finished(child);
  const [url, adminUrl] = await new Promise<[string, string]>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const match = /public +listening on (http:\/\/\S+)\n.*admin API +listening on (http:\/\/\S+)\n/.exec(out);
      if (match) resolve([match[1], match[2]]);
    });
    void exit.then((res) => reject(new Error(`server exited early (${res.code}): ${res.stderr}`)));
  });
  return { child, url, adminUrl, exit };
}
