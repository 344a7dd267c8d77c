import closeWithGrace from 'close-with-grace';
import { ConfigError, loadConfig, type Config } from './config.js';
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
  const server = await startServer(config);
  process.stdout.write(`agent-auth listening on ${server.url} (issuer ${config.issuer}); admin API on ${server.adminUrl}\n`);
  closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
    if (err) process.stderr.write(`agent-auth: shutting down after error: ${err.message}\n`);
    else if (signal) process.stdout.write(`agent-auth: ${signal} received, draining\n`);
    await server.close();
  });
}

main().catch((err) => {
  process.stderr.write(`agent-auth: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
