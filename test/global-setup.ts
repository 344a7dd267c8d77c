import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { TestProject } from 'vitest/node';
import { migrate } from '../src/db/migrate.js';
import { wrapPglite } from '../src/db/pglite.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A migrated, empty embedded store as a data-directory dump; empty when testing on PostgreSQL. */
    pgliteTemplate: string;
  }
}

/**
 * Booting PGlite from nothing runs initdb in WASM, seconds per test server on a busy machine.
 * Every test server of the run starts instead from one migrated store, made here once.
 */
export default async function setup(project: TestProject) {
  // Tests that start the server or the CLI as a process run dist/, as users do: compile what changed
  // (nothing, after `npm ci` or an earlier run: about a second).
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-b', 'tsconfig.build.json'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    stdio: 'inherit',
  });
  if (process.env.TEST_DATABASE_URL) {
    project.provide('pgliteTemplate', '');
    return;
  }
  const db = await PGlite.create();
  await migrate(wrapPglite(db));
  const file = join(tmpdir(), `agent-auth-pglite-template-${process.pid}.tar`);
  writeFileSync(file, Buffer.from(await (await db.dumpDataDir('none')).arrayBuffer()));
  await db.close();
  project.provide('pgliteTemplate', file);
  return () => rmSync(file, { force: true });
}
