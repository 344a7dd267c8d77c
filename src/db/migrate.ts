import { fileURLToPath } from 'node:url';
import Postgrator from 'postgrator';
import type { Db } from './types.js';

const migrationsDir = fileURLToPath(new URL('../../migrations', import.meta.url));
// Any constant works; it only has to be the same for every instance of the server.
const MIGRATION_LOCK_ID = 7240815;

/** Brings the schema to the newest version; instances starting together take turns. */
export async function migrate(db: Db): Promise<void> {
  await db.transaction(
    async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_ID]);
      const { rows } = await tx.query<{ schema: string }>('SELECT current_schema() AS schema');
      const postgrator = new Postgrator({
        driver: 'pg',
        migrationPattern: `${migrationsDir}/*.sql`,
        schemaTable: 'schema_migrations',
        currentSchema: rows[0].schema,
        execQuery: (sql) => tx.query(sql),
        execSqlScript: (sql) => tx.exec(sql),
      });
      await postgrator.migrate();
    },
    { unbounded: true },
  );
}
