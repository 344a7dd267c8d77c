import closeWithGrace from 'close-with-grace';
import { type Config, ConfigError, loadConfig } from './config.js';
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
  if (config.idTokenSigningAlg && config.idTokenSigningAlg !== 'RS256') {
    process.stderr.write(
      `agent-auth: warning: ID_TOKEN_SIGNING_ALG=${config.idTokenSigningAlg} breaks clients that assume RS256; RS256 is recommended (a website may register its own id_token_signed_response_alg)\n`,
    );
  }
  const server = await startServer(config);
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

main().catch((err) => {
  process.stderr.write(`agent-auth: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
