#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so `npm ci` is the only install step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/index.ts');
await main(process.argv);
