import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // Most test files wait on sockets, browsers and timers, not the CPU: two at a time on a 2-core machine.
    maxWorkers: 2,
    // PGlite boots a WASM PostgreSQL per test file; give it room on a busy 2-core machine.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
