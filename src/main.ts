import closeWithGrace from 'close-with-grace';
import { type Config, ConfigError, defaultOf, loadConfig } from './config.js';
import { diskFullFailure, freeBytes, megabytes } from './db/data-dir-space.js';
import { startServer } from './server.js';

async function main() {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`agent-auth: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const server = await startServer(config).catch(async (err: unknown) => {
    throw new Error(await startFailure(err, config));
  });
  // The pre-stop delay, then up to 10 s to drain; past that the process exits 1.
  closeWithGrace({ delay: (config.shutdownDelaySeconds + 10) * 1000 }, async ({ err, signal }) => {
    if (err) process.stderr.write(`agent-auth: shutting down after error: ${err.message}\n`);
    else if (signal) {
      const delay = config.shutdownDelaySeconds;
      process.stdout.write(`agent-auth: ${signal} received, ${delay ? `not ready; draining in ${delay} s` : 'draining'}\n`);
    }
    await server.close();
  });
  // Only now: whoever waits for this line may signal the process at once.
  process.stdout.write(
    [
      `agent-auth ready; websites and agents use the issuer ${config.issuer}`,
      `  discovery    ${config.issuer}/.well-known/oauth-authorization-server`,
      `  public       listening on ${server.url}`,
      `  admin API    listening on ${server.adminUrl}`,
      `  admin token  ${server.adminTokenSource}`,
      `  mail         ${server.mail}`,
      '',
    ].join('\n'),
  );
}

/** Anything thrown, as one line of text: never `[object Object]`. */
function describe(err: unknown): string {
  let text = String(err);
  if (err instanceof Error) text = err.message;
  else if (typeof err === 'object' && err !== null) {
    const { message, name, errno, code } = err as Record<string, unknown>;
    const named = [name, errno ?? code].filter((part) => part !== undefined).join(' ');
    text = typeof message === 'string' ? message : named || JSON.stringify(err);
  }
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * Why the server could not start, in one readable line. The embedded engine failing as it does on
 * a full disk (a bare `Aborted()`, an errno without a message) is named for what it most likely is.
 */
async function startFailure(err: unknown, config: Config): Promise<string> {
  const diskFull = diskFullFailure(err);
  if (config.databaseUrl || config.dataDir === 'memory' || !diskFull) return describe(err);
  const free = await freeBytes(config.dataDir).then(megabytes, () => 'unknown');
  const needed = config.dataDirMinFreeMb || defaultOf('DATA_DIR_MIN_FREE_MB');
  return (
    `the embedded store in DATA_DIR ${config.dataDir} could not write (${diskFull}): ` +
    `its disk is most likely full (${free} MB free; it needs at least ${needed} MB, DATA_DIR_MIN_FREE_MB)`
  );
}

main().catch((err) => {
  process.stderr.write(`agent-auth: failed to start: ${describe(err)}\n`);
  process.exit(1);
});
