import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const sdk = (file: string) => fileURLToPath(new URL(`./sdk/typescript/src/${file}`, import.meta.url));

export default defineConfig({
  // The agent SDK's source, as tsconfig.json's `paths` has it: tests never run a stale sdk/typescript/dist.
  resolve: {
    alias: [
      { find: /^@agent-auth\/agent$/, replacement: sdk('index.ts') },
      { find: /^@agent-auth\/agent\/protocol$/, replacement: sdk('protocol.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts', 'sdk/typescript/test/**/*.test.ts'],
    // Slow tests (a fresh clone and its npm ci) run once per CI run, by `npm run test:slow`.
    exclude: ['**/node_modules/**', ...(process.env.SLOW_TESTS ? [] : ['test/**/*.slow.test.ts'])],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // Most test files wait on sockets, browsers and timers, not the CPU: two at a time on a 2-core machine.
    maxWorkers: 2,
    // PGlite boots a WASM PostgreSQL per test file; give it room on a busy 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
