/**
 * Summarises a V8 CPU profile (node --cpu-prof): self time by function and by package, and busy time by
 * the function of ours that spent it, so that a benchmark run can say where the server's time goes.
 * Usage: tsx bench/profile-summary.ts FILE [TOP] [REQUESTS] (with REQUESTS: µs per request, ours only).
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

/** Where a frame's code lives: our server's build or source, or something else. */
const OURS = /\/(dist|src)\/[^/]/;
const IDLE = new Set(['(idle)', '(program)']);

/**
 * Busy time charged to our code: each sample goes to the innermost frame of ours on its stack, so a
 * library call counts for the function of ours that made it, unless Fastify's code lies between them;
 * the rest goes to Fastify (and what it called) or to the package it ran in (Node's HTTP parser, timers). With `requests`, the
 * figures are µs per request; the sampler counts wall time, so a write that waits for the CPU counts
 * in full and only shares within one profile compare.
 */
export function ownTime(profile: Profile, requests?: number, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const child of n.children ?? []) parent.set(child, n.id);
  const self = selfTimes(profile);
  const charged = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const leaf = byId.get(id)!.callFrame;
    if (IDLE.has(leaf.functionName)) continue;
    const below = `${owner(leaf.url)}${leaf.url ? '' : ` ${leaf.functionName}`}`;
    let key: string | undefined;
    for (let at: number | undefined = id; at !== undefined && !key; at = parent.get(at)) {
      const { functionName, url, lineNumber } = byId.get(at)!.callFrame;
      // A callback-style hook of ours runs the rest of Fastify's pipeline inside its done(): that is Fastify's.
      if (url.includes('node_modules/fastify/')) key = `[fastify, then ${below}]`;
      else if (OURS.test(url) && !url.includes('node_modules')) key = `${functionName || '(anonymous)'} ${owner(url)}:${lineNumber + 1}`;
    }
    key ??= leaf.functionName === '(garbage collector)' ? '(garbage collector)' : `[${below}]`;
    busy += us;
    charged.set(key, (charged.get(key) ?? 0) + us);
  }
  const figure = (us: number) => (requests ? `${(us / requests).toFixed(2).padStart(8)} µs` : `${((100 * us) / busy).toFixed(1).padStart(5)}%`);
  let ours = 0;
  let fastify = 0;
  for (const [name, us] of charged) {
    if (name.startsWith('[fastify')) fastify += us;
    else if (!name.startsWith('[') && !name.startsWith('(')) ours += us;
  }
  const share = (us: number) => `${figure(us).trim()} (${((100 * us) / busy).toFixed(0)}%)`;
  const lines = [
    `busy time by the function of ours that spent it${requests ? `, per request (${requests} requests)` : ''}:`,
    `  ours ${share(ours)}, Fastify and what it called ${share(fastify)}, the rest (Node's HTTP, V8, GC) ${share(busy - ours - fastify)}`,
  ];
  for (const [name, us] of [...charged].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${figure(us)}  ${name}`);
  return lines.join('\n');
}

function selfTimes(profile: Profile): Map<number, number> {
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  return self;
}

export function summarise(profile: Profile, top = 25): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = selfTimes(profile);
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
  lines.push('', ownTime(profile, undefined, top));
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, top, requests] = process.argv.slice(2);
  if (!file) throw new Error('usage: tsx bench/profile-summary.ts FILE.cpuprofile [TOP] [REQUESTS]');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  process.stdout.write(`${requests ? ownTime(profile, Number(requests), Number(top)) : summarise(profile, Number(top ?? 25))}\n`);
}
