import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

// Linux reports CPU time in clock ticks of 10 ms (getconf CLK_TCK = 100).
const TICK_MS = 10;

/**
 * CPU time (user + system) the process has used so far, in ms. Unlike throughput on a shared
 * machine, CPU time per request hardly depends on what else runs there.
 */
export function cpuMs(pid: number): number {
  try {
    // Fields after the parenthesised command name: state is 3rd, utime 14th, stime 15th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** A server under test, in a child process of its own so that its memory is its own. */
export interface ServerProcess {
  name: string;
  pid: number;
  /** Peak resident set (VmHWM) of the process so far, in MB. */
  peakRssMb(): number;
  /** Highest VmRSS sampled since the last `resetRss` (every 100 ms), in MB. */
  sampledRssMb(): number;
  resetRss(): void;
  stop(): Promise<void>;
}

function statusKb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** Waits until `url` answers (any status): the server has bound its port. */
async function waitForUrl(url: string, child: ChildProcess, output: () => string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${output()}`);
    try {
      await fetch(url);
      return;
    } catch {
      await sleep(100);
    }
  }
  throw new Error(`server did not answer ${url} within ${timeoutMs} ms:\n${output()}`);
}

export async function startProcess(
  name: string,
  command: string,
  args: string[],
  env: Record<string, string>,
  readyUrl: string,
): Promise<ServerProcess> {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  await waitForUrl(readyUrl, child, () => output);

  const pid = child.pid!;
  let sampled = 0;
  const sampler = setInterval(() => {
    sampled = Math.max(sampled, statusKb(pid, 'VmRSS'));
  }, 100);
  sampler.unref();

  return {
    name,
    pid,
    peakRssMb: () => statusKb(pid, 'VmHWM') / 1024,
    sampledRssMb: () => Math.max(sampled, statusKb(pid, 'VmRSS')) / 1024,
    resetRss: () => {
      sampled = 0;
    },
    async stop() {
      clearInterval(sampler);
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
