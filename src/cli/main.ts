#!/usr/bin/env node
// The `classroom-sync` command: package.json's "bin", run by plain `node` from dist/. It only
// loads the CLI (./index.ts), so that what must be in place before the rest is imported can be
// set up here first.
const { main } = await import('./index.ts');
await main(process.argv);
