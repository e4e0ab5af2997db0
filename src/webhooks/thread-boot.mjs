// The delivery thread's first module. A worker thread does not inherit the TypeScript loader its
// process registered (bin/classroom-sync.js), so when the entry is a .ts file it registers its own.
import { workerData } from 'node:worker_threads';

if (workerData.entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);
