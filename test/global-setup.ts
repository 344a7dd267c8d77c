import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../src/db/migrate.js';
import { wrapPglite } from '../src/db/pglite.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated, empty embedded store as a data-directory dump; empty when testing on PostgreSQL. */
    pgliteTemplate: string;
    /** This run's mark on the PostgreSQL schemas its workers keep for reuse (test/helpers/database.ts). */
    testRun: string;
  }
}

const root = fileURLToPath(new URL('..', import.meta.url));

/** Test files that start the server or the CLI as a process (test/helpers/process.ts) run dist/, as users do. */
const runsBuiltCode = (file: string) => /helpers\/process\.js'/.test(readFileSync(file, 'utf8'));

/**
 * Booting PGlite from nothing runs initdb in WASM, seconds per test server on a busy machine. Every test
 * server of the run starts instead from one migrated store, made once for these migrations and this PGlite
 * and kept in the temporary directory for later runs.
 */
async function pgliteTemplate(): Promise<string> {
  const migrations = join(root, 'migrations');
  const hash = createHash('sha256').update(readFileSync(join(root, 'node_modules/@electric-sql/pglite/package.json')));
  for (const name of readdirSync(migrations).sort()) hash.update(name).update(readFileSync(join(migrations, name)));
  const file = join(tmpdir(), `agent-auth-pglite-template-${hash.digest('hex').slice(0, 16)}.tar`);
  if (existsSync(file)) return file;
  const db = await PGlite.create();
  await migrate(wrapPglite(db));
  const partial = `${file}.${process.pid}`;
  writeFileSync(partial, Buffer.from(await (await db.dumpDataDir('none')).arrayBuffer()));
  await db.close();
  renameSync(partial, file);
  return file;
}

export default async function setup(project: TestProject) {
  // Compile what changed (nothing, after `npm ci` or an earlier run: about a second), only when needed.
  if (project.vitest.state.getFilepaths().some(runsBuiltCode)) {
    execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-b', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  }
  // The project's own environment (vitest.config.ts): the project `pglite` clears TEST_DATABASE_URL.
  const postgres = project.config.env?.TEST_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  project.provide('pgliteTemplate', postgres ? '' : await pgliteTemplate());
  const run = randomBytes(4).toString('hex');
  project.provide('testRun', run);
  if (postgres) return () => dropSchemasOf(postgres, run);
}

/** The schemas the workers of this run kept for reuse outlive the workers: drop them once every file has run. */
async function dropSchemasOf(url: string, run: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string }>(`SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE $1`, [`t\\_${run}\\_%`]);
    for (const { name } of rows) await client.query(`DROP SCHEMA ${name} CASCADE`);
  } finally {
    await client.end();
  }
}
