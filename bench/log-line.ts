/**
 * `tsx bench/log-line.ts`: the CPU time this process spends on one log line written to /dev/null, with our
 * logger options (src/logger.ts) and without parts of them. What an access line costs each request at
 * LOG_LEVEL=info.
 */
import pino from 'pino';
import { loggerOptions } from '../src/logger.js';

const LINES = 100_000;
const options = loggerOptions('info') as pino.LoggerOptions & { redact: { paths: string[]; censor: string } };
const variants: Record<string, pino.LoggerOptions> = {
  'our options': options,
  'without the wildcard paths': { ...options, redact: { ...options.redact, paths: options.redact.paths.filter((p) => !p.startsWith('*')) } },
  'without redaction': { ...options, redact: undefined },
};
// What the access line logs: a request (through the req serializer), its status and time.
const request = { method: 'GET', url: '/userinfo?x=1', ip: '127.0.0.1' };
const fields = { reqId: 'req-1', req: request, res: { statusCode: 200 }, responseTime: 1.5 };
const destination = pino.destination({ dest: '/dev/null', sync: true });
for (const [name, variant] of Object.entries(variants)) {
  const log = pino(variant, destination);
  for (let i = 0; i < LINES / 5; i++) log.info(fields, 'request completed');
  // CPU time, not the clock: a busy machine delays the loop without making a line dearer.
  const started = process.cpuUsage();
  for (let i = 0; i < LINES; i++) log.info(fields, 'request completed');
  const { user, system } = process.cpuUsage(started);
  const us = (user + system) / LINES;
  process.stdout.write(`${name.padEnd(28)} ${us.toFixed(2)} µs per line\n`);
}
