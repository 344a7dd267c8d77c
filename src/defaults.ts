/**
 * Defaults that the configuration (src/config.ts) and the CLI share: here, apart from the configuration's
 * schema, so that the CLI starts without loading zod (a third of its start-up).
 */
export const DEFAULT_DATA_DIR = './data';
export const DEFAULT_ADMIN_PORT = 3001;
