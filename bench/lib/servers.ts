import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ourEnv } from './ours.js';
import { startProcess } from './processes.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Our server runs as `npm start` runs it: node with the start script's flags, on the build in `dir`/dist. */
function serverArgs(dir: string): string[] {
  const { scripts } = JSON.parse(readFileSync(`${dir}package.json`, 'utf8')) as { scripts: { start: string } };
  const [node, ...rest] = scripts.start.split(/\s+/);
  if (node !== 'node') throw new Error(`unexpected start script: ${scripts.start}`);
  return rest.map((arg) => (arg.startsWith('dist/') ? `${dir}${arg}` : arg));
}

/**
 * One of our servers, the checkout in `dir` (ending in /), on `port` (its admin listener on the next
 * port) over the store's `location`: the process, and the base URLs of both listeners.
 */
export async function startOurServer(
  dir: string,
  name: string,
  port: number,
  location: { url?: string; dataDir?: string },
  nodeFlags: string[] = [],
  env: Record<string, string> = {},
) {
  const base = `http://127.0.0.1:${port}`;
  const server = await startProcess(
    name,
    process.execPath,
    [...nodeFlags, ...serverArgs(dir)],
    { ...ourEnv(port, port + 1, location), ...env },
    `${base}/healthz`,
  );
  return { server, base, adminBase: `http://127.0.0.1:${port + 1}` };
}

/** A peer or the ceiling: a TypeScript file of bench/ under tsx, told its port in PEER_PORT. */
export function tsxProcess(name: string, file: string, env: Record<string, string>, port: number) {
  return startProcess(
    name,
    process.execPath,
    ['--import', 'tsx', `${root}${file}`],
    { PEER_PORT: String(port), ...env },
    `http://127.0.0.1:${port}/`,
  );
}
