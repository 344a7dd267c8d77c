import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import type { Measurement } from './load.js';

/** The hot paths the guard watches, each against the bare route measured in the same run. */
export const GUARDED = ['userinfo', 'introspect'] as const;
/** A hot path fails the guard below this share of its recorded figure. */
export const GUARD_FLOOR = 0.8;

/** The figures of one machine class and store: per hot path, the bare route's CPU per request over ours. */
type Recorded = Record<string, Record<(typeof GUARDED)[number], number>>;

/** Machines alike enough to compare: as many cores of the same model. */
export const machineClass = () => `${cpus().length} x ${cpus()[0]?.model.trim() ?? 'unknown'}`;

/**
 * CPU per request is the figure that holds on a shared machine (bench/README.md); as a share of the bare
 * route's, measured minutes apart at most, it holds across runs of the same machine class.
 */
function shares(ceiling: Measurement, ours: Record<string, Measurement>) {
  return Object.fromEntries(GUARDED.map((op) => [op, (ceiling.cpuMs ?? 0) / (ours[op]?.cpuMs ?? Number.POSITIVE_INFINITY)])) as Recorded[string];
}

/**
 * Compares this run with the figures recorded in `file` for this machine class and store (or records
 * them, `record`); returns the lines to print and whether every hot path held.
 */
export function guard(file: string, store: string, ceiling: Measurement, ours: Record<string, Measurement>, record: boolean) {
  const key = `${machineClass()}, ${store}`;
  const now = shares(ceiling, ours);
  const recorded: Recorded = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Recorded) : {};
  const lines = GUARDED.map(
    (op) => `  ${op}: ${now[op].toFixed(3)} of the bare route's CPU per request (recorded ${recorded[key]?.[op]?.toFixed(3) ?? 'none'})`,
  );
  if (record) {
    writeFileSync(file, `${JSON.stringify({ ...recorded, [key]: now }, null, 2)}\n`);
    return { lines: [...lines, `  recorded for ${key} in ${file}`], held: true };
  }
  if (!recorded[key]) return { lines: [...lines, `  no figure recorded for ${key}: nothing to compare (--record writes one)`], held: true };
  const fallen = GUARDED.filter((op) => now[op] < GUARD_FLOOR * recorded[key][op]);
  return {
    lines: [...lines, ...fallen.map((op) => `  FAILED: ${op} is below ${GUARD_FLOOR} of the recorded figure`)],
    held: fallen.length === 0,
  };
}
