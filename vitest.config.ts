import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// Files whose subject is not the store (browsers, SDKs, real client libraries, docs and deploy files,
// pure rules): .ci/run's second pass, on PostgreSQL, sets STORE_TESTS_ONLY so that they run once per CI run.
// Everything else runs on both stores; `npm test` alone always runs every file.
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
  'test/console/console-browser.test.ts',
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

const sdk = (file: string) => fileURLToPath(new URL(`./sdk/typescript/src/${file}`, import.meta.url));
const kit = (file: string) => fileURLToPath(new URL(`./sdk/website/src/${file}`, import.meta.url));

export default defineConfig({
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
    include: ['test/**/*.test.ts', 'sdk/typescript/test/**/*.test.ts'],
    // Slow tests (a fresh clone and its npm ci) run once per CI run, by `npm run test:slow`.
    exclude: [
      '**/node_modules/**',
      ...(process.env.SLOW_TESTS ? [] : ['test/**/*.slow.test.ts']),
      ...(process.env.STORE_TESTS_ONLY ? storeIndependent : []),
    ],
    globalSetup: ['test/global-setup.ts'],
    pool: 'forks',
    // A worker keeps the modules it loaded from one test file to the next: each file starts its own servers
    // and databases and closes them, and no test changes process-wide state it does not restore. Importing
    // the server afresh for every file cost about 30% of a run's CPU.
    isolate: false,
    // Most test files wait on sockets, browsers and timers, not the CPU: two at a time on a 2-core machine.
    maxWorkers: 2,
    // A hook may start a server on a seeded embedded store (two WASM PostgreSQL boots) while CI runs the
    // passes, types and lint side by side on two cores: give it room.
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
