import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Integration tests isolate themselves (own database, own queue prefix), so files may run side by side.
    maxWorkers: 2,
    env: { LOG_LEVEL: 'silent', NODE_ENV: 'test' },
  },
});
