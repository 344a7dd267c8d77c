import { defineConfig } from 'vitest/config';

// The SDK's own tests: no server, no database; agent-auth's suite (test/agent) covers it against a real server.
export default defineConfig({ test: { include: ['test/**/*.test.ts'] } });
