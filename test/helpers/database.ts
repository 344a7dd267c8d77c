import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { inject } from 'vitest';
import { defaultOf } from '../../src/config.js';
import { wrapPglite } from '../../src/db/pglite.js';
import { openPostgres } from '../../src/db/postgres.js';
import type { Db } from '../../src/db/types.js';

export const usingPostgres = Boolean(process.env.TEST_DATABASE_URL);
export const storeName = usingPostgres ? 'postgres' : 'pglite';

export interface TestDatabase {
  /** DATABASE_URL for a server process on this database (PostgreSQL only). */
  url?: string;
  open(): Promise<Db>;
  drop(): Promise<void>;
}

/** URL of the PostgreSQL database with `search_path` set to one schema. */
export function schemaUrl(base: string, schema: string): string {
  const url = new URL(base);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** The migrated, empty store test/global-setup.ts dumped, for PGlite's `loadDataDir`. */
const template = () => new Blob([readFileSync(inject('pgliteTemplate'))]);

/** An in-memory PGlite loaded from the template. */
async function openPgliteFromTemplate(): Promise<Db> {
  return wrapPglite(await PGlite.create({ loadDataDir: template() }));
}

/**
 * The embedded store a server's first start on a new DATA_DIR would create at `dir`, made from the
 * migrated template instead: seconds instead of a minute on a busy machine.
 */
export async function seedPgliteDir(dir: string): Promise<void> {
  const db = await PGlite.create(dir, { loadDataDir: template() });
  await db.close();
}

/**
 * A fresh, empty database for one test file: a schema of its own on PostgreSQL when
 * TEST_DATABASE_URL is set (so parallel files never collide), else an in-memory PGlite.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const base = process.env.TEST_DATABASE_URL;
  if (!base) {
    return { open: openPgliteFromTemplate, drop: async () => {} };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const url = schemaUrl(base, schema);
  return {
    url,
    open: async () => openPostgres(url, defaultOf('DATABASE_TIMEOUT_MS')),
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await c.end();
    },
  };
}
