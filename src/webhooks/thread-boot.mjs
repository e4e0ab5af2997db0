// The delivery thread's first module. It lowers the thread's priority before anything else runs
// (see ./thread.ts), and, since a worker thread does not inherit the TypeScript loader its process
// registered (scripts/dev-cli.mjs runs the sources through tsx), registers its own when the entry is a .ts file.
import { platform, setPriority } from 'node:os';
import { workerData } from 'node:worker_threads';

// On Linux a nice value belongs to one thread; elsewhere it would be the whole process's.
if (platform() === 'linux') setPriority(workerData.nice);

if (workerData.entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);
