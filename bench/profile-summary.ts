/**
 * Summarises a V8 CPU profile (node --cpu-prof): self time by function and by package, so that a
 * benchmark run can say where the server's time goes. Usage: tsx bench/profile-summary.ts FILE [TOP]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** node_modules/<package> or our own source file; Node internals and V8 as they are. */
function owner(url: string): string {
  if (!url) return '(native / V8)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  if (url.startsWith('node:')) return url;
  return url.replace(/^file:\/\//, '').replace(process.cwd() + '/', '');
}

export function summarise(profile: Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fns = new Map<string, number>();
  const owners = new Map<string, number>();
  for (const [id, us] of self) {
    const { callFrame } = byId.get(id)!;
    const name = `${callFrame.functionName || '(anonymous)'} ${owner(callFrame.url)}:${callFrame.lineNumber + 1}`;
    fns.set(name, (fns.get(name) ?? 0) + us);
    owners.set(owner(callFrame.url), (owners.get(owner(callFrame.url)) ?? 0) + us);
  }
  const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)}%`;
  const lines = [`total sampled ${(total / 1e6).toFixed(2)} s`, '', 'self time by package / file:'];
  for (const [name, us] of [...owners].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${name}`);
  lines.push('', 'self time by function:');
  for (const [name, us] of [...fns].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(us)}  ${name}`);
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, top] = process.argv.slice(2);
  if (!file) throw new Error('usage: tsx bench/profile-summary.ts FILE.cpuprofile [TOP]');
  process.stdout.write(`${summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(top ?? 25))}\n`);
}
