#!/usr/bin/env node
// The CLI straight from the TypeScript sources (through tsx), with no build: what the tests and
// benchmarks run, and `npm run dev -- <command>` during development. The package's own command
// is the compiled dist/cli/main.js.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
