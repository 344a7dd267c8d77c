import { existsSync } from 'node:fs';
import { describe } from 'vitest';
import { CHROMIUM_PATH } from '../../examples/agent/agent.js';

/** Whether Debian's Chromium (or CHROMIUM_PATH) is there; a browser is never downloaded. */
export const hasChromium = existsSync(CHROMIUM_PATH);

/**
 * `describe` for tests that drive a real browser: without Chromium they are skipped, with one line
 * saying why and how to get it (CI installs it, so there they always run).
 */
export function describeInChromium(what: string): typeof describe | typeof describe.skip {
  if (hasChromium) return describe;
  console.warn(`${what}: skipped, no Chromium at ${CHROMIUM_PATH} (apt-get install -y chromium, or set CHROMIUM_PATH)`);
  return describe.skip;
}
