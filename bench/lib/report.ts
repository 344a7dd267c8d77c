import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { StoreKind } from './database.js';
import type { Measurement } from './load.js';
import type { RoundTrips } from './round-trips.js';

export interface LargeStoreResult {
  rows: number;
  /** Per operation, the measurement with the median p50 of three turns, on each of the two stores. */
  empty: Record<string, Measurement>;
  large: Record<string, Measurement>;
}

export interface StoreReport {
  store: StoreKind;
  date: string;
  machine: { node: string; cpus: number; loadAverage: number[] };
  options: { durationSeconds: number; connections: number; codes: number; smoke: boolean };
  peerNote: string;
  ceiling: Measurement;
  ours: Record<string, Measurement>;
  peer?: Record<string, Measurement>;
  /** node-oidc-provider with its in-memory adapter. */
  peerInMemory?: Record<string, Measurement>;
  rssMb: Record<string, { peak: number; underLoad: number }>;
  roundTrips: { ours: RoundTrips; peer?: RoundTrips };
  large?: LargeStoreResult;
  /** Our hot reads and node-oidc-provider's in memory, both servers up, measured in turns (median of `rounds`). */
  headToHead?: { rounds: number; ours: Record<string, Measurement>; peerInMemory: Record<string, Measurement> };
  /** Our server with the grant cache full at its default size (`size` grants, clients and tokens). */
  cacheFull?: { size: number; introspect: Measurement; userinfo: Measurement; missesUnderLoad?: number };
  targets: { target: string; value: string; met: boolean }[];
}

/** Our operation and the peer's comparable one (node-oidc-provider has no agent back channel). */
export const COMPARABLE: Record<string, string> = {
  userinfo: 'userinfo',
  introspect: 'introspect',
  'token (refresh_token)': 'token (refresh_token)',
};

const fixed = (n: number, digits = 0) => n.toFixed(digits);
const ratio = (a: number | undefined, b: number | undefined) => (a !== undefined && b ? `${(a / b).toFixed(2)}x` : '–');
/** Server and database CPU time per request together (the database's is 0 when it runs in process). */
export const totalCpu = (m: Measurement | undefined) => (m?.cpuMs === undefined ? undefined : m.cpuMs + (m.dbCpuMs ?? 0));
const cpuCell = (m: Measurement | undefined) =>
  m?.cpuMs === undefined ? '–' : m.dbCpuMs === undefined ? m.cpuMs.toFixed(2) : `${m.cpuMs.toFixed(2)} + ${m.dbCpuMs.toFixed(2)}`;

/** Which targets were met, from the measured figures. */
export function checkTargets(r: Omit<StoreReport, 'targets'>): StoreReport['targets'] {
  const targets: StoreReport['targets'] = [];
  const against =
    (peer: Record<string, Measurement> | undefined, name: string, ours = r.ours) =>
    (op: string, min: number) => {
      if (!peer?.[op] || !ours[op]) return;
      const x = ours[op].rate / peer[op].rate;
      const cpu = ratio(totalCpu(peer[op]), totalCpu(ours[op]));
      targets.push({ target: `${op} ≥ ${min}x ${name}`, value: `${x.toFixed(2)}x req/s (${cpu} less CPU per request)`, met: x >= min });
    };
  const vsPeer = against(r.peer, 'node-oidc-provider');
  vsPeer('token (refresh_token)', 2);
  vsPeer('introspect', 1.5);
  vsPeer('userinfo', 1.5);
  // Measured in turns when the run has them: figures taken minutes apart drift with the machine.
  const vsPeerInMemory = r.headToHead
    ? against(r.headToHead.peerInMemory, 'node-oidc-provider in memory (in turns)', r.headToHead.ours)
    : against(r.peerInMemory, 'node-oidc-provider in memory');
  vsPeerInMemory('userinfo', 2);
  vsPeerInMemory('introspect', 2);
  const vsCeiling = (op: string, min: number) => {
    if (!r.ours[op]) return;
    const x = r.ours[op].rate / r.ceiling.rate;
    targets.push({ target: `${op} ≥ ${min.toFixed(2)}x the bare Fastify route`, value: `${x.toFixed(2)}x req/s`, met: x >= min });
  };
  vsCeiling('userinfo', 0.25);
  vsCeiling('introspect', 0.2);
  const rt = r.roundTrips.ours;
  const trips = (op: string, max: number) => targets.push({ target: `${op} ≤ ${max} round trips`, value: String(rt[op]), met: rt[op] <= max });
  trips('full sign-in', 8);
  trips('token (refresh_token)', 3);
  trips('introspect (access token)', 1);
  trips('userinfo', 1);
  if (r.large) {
    for (const op of Object.keys(r.large.large)) {
      const x = r.large.large[op].p50 / r.large.empty[op].p50;
      targets.push({ target: `${op} p50 with ${r.large.rows.toLocaleString('en')} rows ≤ 1.2x empty`, value: `${x.toFixed(2)}x`, met: x <= 1.2 });
    }
  }
  const rss = r.rssMb.ours.peak;
  targets.push({ target: 'peak RSS under load < 150 MB', value: `${rss.toFixed(0)} MB`, met: rss < 150 });
  const full = r.rssMb['ours, cache full']?.peak;
  if (full !== undefined) targets.push({ target: 'peak RSS under load, grant cache full < 150 MB', value: `${full.toFixed(0)} MB`, met: full < 150 });
  const measured = [
    ...Object.values(r.ours),
    ...(r.cacheFull ? [r.cacheFull.introspect, r.cacheFull.userinfo] : []),
    ...Object.values(r.headToHead?.ours ?? {}),
  ];
  const errors = measured.reduce((sum, m) => sum + m.errors, 0);
  targets.push({ target: 'no errors', value: String(errors), met: errors === 0 });
  const limited = measured.reduce((sum, m) => sum + (m.rateLimited ?? 0), 0);
  targets.push({ target: 'no 429', value: String(limited), met: limited === 0 });
  return targets;
}

export function toMarkdown(r: StoreReport): string {
  const lines: string[] = [];
  lines.push(`# Benchmark ${r.date}, store: ${r.store}${r.options.smoke ? ' (smoke run)' : ''}`, '');
  lines.push(
    `Node ${r.machine.node}, ${r.machine.cpus} CPUs, load average at start ${r.machine.loadAverage.map((l) => l.toFixed(1)).join(' ')}; ` +
      `${r.options.durationSeconds} s per operation, ${r.options.connections} connections, ${r.options.codes} codes prepared. ` +
      `Load generator, servers and database share the machine.`,
    '',
  );
  lines.push(
    '| operation | ours req/s | p50 ms | p99 ms | errors | round trips | CPU ms/req (server + db) | peer req/s | peer p50 ms | peer round trips | ' +
      'peer CPU ms/req | ours/peer req/s | peer/ours CPU | peer in memory req/s | peer in memory CPU ms/req | ' +
      'ours/peer in memory req/s | ours/ceiling req/s |',
  );
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  const tripsFor = (op: string) => r.roundTrips.ours[op === 'introspect' ? 'introspect (access token)' : op];
  for (const [op, m] of Object.entries(r.ours)) {
    const peerOp = COMPARABLE[op];
    const p = peerOp ? r.peer?.[peerOp] : undefined;
    const mem = peerOp ? r.peerInMemory?.[peerOp] : undefined;
    const peerTrips = r.roundTrips.peer?.[op === 'introspect' ? 'introspect (access token)' : op];
    lines.push(
      `| ${op}${op === 'full sign-in' ? ' (flows/s)' : ''} | ${fixed(m.rate)} | ${m.p50} | ${m.p99} | ${m.errors} | ${tripsFor(op) ?? '–'} | ` +
        `${cpuCell(m)} | ${p ? fixed(p.rate) : '–'} | ${p ? p.p50 : '–'} | ${peerTrips ?? '–'} | ${cpuCell(p)} | ` +
        `${ratio(m.rate, p?.rate)} | ${ratio(totalCpu(p), totalCpu(m))} | ${mem ? fixed(mem.rate) : '–'} | ${cpuCell(mem)} | ` +
        `${ratio(m.rate, mem?.rate)} | ${ratio(m.rate, r.ceiling.rate)} |`,
    );
  }
  lines.push(
    `| ceiling: bare Fastify JSON route | ${fixed(r.ceiling.rate)} | ${r.ceiling.p50} | ${r.ceiling.p99} | ${r.ceiling.errors} | 0 | ` +
      `${cpuCell(r.ceiling)} | | | | | | | | | | 1.00x |`,
    '',
  );
  lines.push(`Peer: ${r.peerNote}`, '');

  lines.push('## Database round trips per operation (statements; BEGIN and COMMIT count)', '');
  lines.push('| operation | ours | node-oidc-provider |', '|---|---:|---:|');
  for (const [op, n] of Object.entries(r.roundTrips.ours)) lines.push(`| ${op} | ${n} | ${r.roundTrips.peer?.[op] ?? '–'} |`);
  lines.push('');

  lines.push('## Memory (MB)', '', '| process | peak RSS (VmHWM) | highest sampled RSS while measured |', '|---|---:|---:|');
  for (const [name, m] of Object.entries(r.rssMb)) lines.push(`| ${name} | ${m.peak.toFixed(0)} | ${m.underLoad.toFixed(0)} |`);
  lines.push('');

  if (r.large) {
    lines.push(`## Large store: ${r.large.rows.toLocaleString('en')} refresh tokens and ${r.large.rows.toLocaleString('en')} past requests`, '');
    lines.push(
      'Two servers side by side, one per store, measured in turns (three rounds; the median p50 counts). ' +
        'Client: fetch, one request at a time per connection, so that latency has sub-millisecond resolution.',
      '',
    );
    lines.push('| operation | p50 ms empty | p50 ms large | large/empty | req/s empty | req/s large |', '|---|---:|---:|---:|---:|---:|');
    for (const op of Object.keys(r.large.large)) {
      const e = r.large.empty[op];
      const l = r.large.large[op];
      lines.push(`| ${op} | ${e.p50} | ${l.p50} | ${ratio(l.p50, e.p50)} | ${fixed(e.rate)} | ${fixed(l.rate)} |`);
    }
    lines.push('');
  }

  if (r.headToHead) {
    const { rounds, ours, peerInMemory } = r.headToHead;
    lines.push('## Hot reads against node-oidc-provider in memory, in turns', '');
    lines.push(
      `Both servers up, the same operation measured on each in turn, ${rounds} rounds (each server first in turn); ` +
        'the median rate counts. The in-memory targets are read from here.',
      '',
    );
    lines.push('| operation | ours req/s | peer in memory req/s | ours/peer | ours CPU ms/req | peer CPU ms/req | peer/ours CPU |');
    lines.push('|---|---:|---:|---:|---:|---:|---:|');
    for (const op of Object.keys(ours)) {
      const [o, p] = [ours[op], peerInMemory[op]];
      lines.push(
        `| ${op} | ${fixed(o.rate)} | ${fixed(p.rate)} | ${ratio(o.rate, p.rate)} | ${cpuCell(o)} | ${cpuCell(p)} | ${ratio(totalCpu(p), totalCpu(o))} |`,
      );
    }
    lines.push('');
  }

  if (r.cacheFull) {
    lines.push(`## Grant cache full: ${r.cacheFull.size.toLocaleString('en')} grants, websites and access tokens`, '');
    lines.push(
      'A server of its own; every request names another grant, each website introspects its own token. Every token is ' +
        'introspected and read once before the load, so that the cache holds them all. ' +
        `Grant reads that missed the cache under load: ${r.cacheFull.missesUnderLoad ?? 'not counted'}. Peak RSS under "Memory" (\`ours, cache full\`).`,
      '',
    );
    lines.push('| operation | req/s | p50 ms | p99 ms | errors | CPU ms/req (server + db) |', '|---|---:|---:|---:|---:|---:|');
    for (const op of ['introspect', 'userinfo'] as const) {
      const m = r.cacheFull[op];
      lines.push(`| ${op} | ${fixed(m.rate)} | ${m.p50} | ${m.p99} | ${m.errors} | ${cpuCell(m)} |`);
    }
    lines.push('');
  }

  lines.push('## Targets', '', '| target | measured | met |', '|---|---:|:---:|');
  for (const t of r.targets) lines.push(`| ${t.target} | ${t.value} | ${t.met ? 'yes' : '**no**'} |`);
  lines.push('');
  return lines.join('\n');
}

/** bench/results/<date>-<store>.md and .json. */
export function writeReport(dir: string, r: StoreReport): string {
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `${r.date}-${r.store}${r.options.smoke ? '-smoke' : ''}`);
  writeFileSync(`${base}.md`, toMarkdown(r));
  writeFileSync(`${base}.json`, `${JSON.stringify(r, null, 2)}\n`);
  return base;
}
