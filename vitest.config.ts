import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import SlowFirst from './test/sequencer.js';

// Files whose subject is not the store (browsers, SDKs, real client libraries, docs and deploy files,
// pure rules): they run on the embedded store only. Every other file runs on PGlite always, and on
// PostgreSQL too when TEST_DATABASE_URL is set (the project `postgres` below).
const storeIndependent = [
  'sdk/typescript/test/**',
  'test/architecture.test.ts',
  // The CLI is an HTTP client of the admin API, whose store side the admin API's own tests check on both stores.
  'test/cli.test.ts',
  'test/agent-keys/cli-keys.test.ts',
  'test/config-docs.test.ts',
  'test/deploy-files.test.ts',
  'test/demo.test.ts',
  'test/examples.test.ts',
  'test/quickstart.test.ts',
  'test/readme-walkthrough.test.ts',
  'test/sdk-python.test.ts',
  'test/sdk-typescript.test.ts',
  'test/agent/**',
  'test/interop/**',
  'test/web-bot-auth/interop.test.ts',
  'test/web-bot-auth/cli-signing-keys.test.ts',
  'test/web-bot-auth/readme-signed-requests.test.ts',
  // A person in Chromium: the pages, scripts and passkeys; the flows' store side is their HTTP tests' (test/account,
  // test/owners, test/owner-flows, test/agent-sign-in, test/mcp/mcp-e2e.test.ts), on both stores.
  'test/console/console-browser.test.ts',
  'test/account/owner-first-hour.test.ts',
  'test/account/portal-browser.test.ts',
  'test/account/step-up-browser.test.ts',
  'test/agent-sign-in/browser.test.ts',
  'test/mcp/people-clients.test.ts',
  'test/passkeys/passkey-browser.test.ts',
  'test/logout/example-website-logout.test.ts',
  'test/pages/pages.test.ts',
  'test/plugins/openapi.test.ts',
  'test/plugins/error-handler.test.ts',
  'test/plugins/rate-limit-redis-hang.test.ts',
  'test/routes/assets-button.test.ts',
  'test/routes/home.test.ts',
  'test/protocol/**',
  'test/oauth/access-token.test.ts',
  // The website kit against local keys, and the MCP README and agents' runs (their store side is test/mcp/mcp-e2e.test.ts's).
  'test/mcp/kit.test.ts',
  'test/mcp/readme-mcp.test.ts',
  'test/mcp/mcp-agent-document.test.ts',
];

const postgres = process.env.TEST_DATABASE_URL;
const tests = ['test/**/*.test.ts', 'sdk/typescript/test/**/*.test.ts'];
// The fuzzers' requests (test/helpers/fuzz.ts): with both stores, 30% of them on PGlite, where each costs
// about three times the CPU, and 70% on PostgreSQL; as many in all as `npm test` sends on one store.
const fuzzScale = Number(process.env.FUZZ_SCALE ?? 1);
const fuzzShare = (share: number) => String(postgres ? fuzzScale * share : fuzzScale);
const notTests = ['**/node_modules/**', 'test/**/*.slow.test.ts'];

const sdk = (file: string) => fileURLToPath(new URL(`./sdk/typescript/src/${file}`, import.meta.url));
const kit = (file: string) => fileURLToPath(new URL(`./sdk/website/src/${file}`, import.meta.url));

export default defineConfig({
  // Outside node_modules, which `npm ci` replaces: vitest keeps each file's last duration there, and the next
  // run on the same checkout starts the longest files first (test/sequencer.ts).
  cacheDir: '.cache/vite',
  // The SDKs' sources, as tsconfig.json's `paths` has them: tests never run a stale dist/ of either.
  resolve: {
    alias: [
      { find: /^@agent-auth\/agent$/, replacement: sdk('index.ts') },
      { find: /^@agent-auth\/agent\/(\w[\w-]*)$/, replacement: sdk('$1.ts') },
      { find: /^@agent-auth\/website$/, replacement: kit('index.ts') },
      { find: /^@agent-auth\/website\/(\w[\w-]*)$/, replacement: kit('$1.ts') },
    ],
  },
  test: {
    // One run, one scheduler: the projects' files share the workers, so the long waits of one store's files
    // (browsers, child processes, timers) overlap the other's work.
    projects: [
      {
        extends: true as const,
        test: { name: 'pglite', include: tests, exclude: notTests, env: { TEST_DATABASE_URL: '', FUZZ_SCALE: fuzzShare(0.3) } },
      },
      ...(postgres
        ? [
            {
              extends: true as const,
              test: { name: 'postgres', include: tests, exclude: [...notTests, ...storeIndependent], env: { FUZZ_SCALE: fuzzShare(0.7) } },
            },
          ]
        : []),
      // The README followed line by line in a fresh clone (npm ci, a Python virtual environment): once per
      // CI run, with SLOW_TESTS set (`npm run test:slow` runs it alone).
      ...(process.env.SLOW_TESTS ? [{ extends: true as const, test: { name: 'slow', include: ['test/**/*.slow.test.ts'] } }] : []),
    ],
    globalSetup: ['test/global-setup.ts'],
    sequence: { sequencer: SlowFirst },
    pool: 'forks',
    // A worker keeps the modules it loaded from one test file to the next: each file starts its own servers
    // and databases and closes them, and no test changes process-wide state it does not restore. Importing
    // the server afresh for every file cost about 30% of a run's CPU.
    isolate: false,
    // Most test files wait on sockets, browsers and timers, not the CPU: three at a time keep two cores busy.
    maxWorkers: 3,
    // A hook may start a server on a seeded embedded store (two WASM PostgreSQL boots) while CI runs types
    // and lint beside the tests on two cores: give it room.
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
