// The delivery thread's first module. Since a worker thread does not inherit the TypeScript loader
// its process registered (scripts/dev-cli.mjs runs the sources through tsx), it registers its own
// when the entry is a .ts file; then it loads the entry, and only then lowers the thread's priority
// (see ./thread.ts). Loading is a one-off burst of CPU (under tsx, compiling every module); at the
// lowest priority on a saturated machine it took more than 30 s, and no message went out until it ended.
import { platform, setPriority } from 'node:os';
import { workerData } from 'node:worker_threads';

if (workerData.entry.endsWith('.ts')) {
  const { register } = await import('tsx/esm/api');
  register();
}
await import(workerData.entry);

// On Linux a nice value belongs to one thread; elsewhere it would be the whole process's.
if (platform() === 'linux') setPriority(workerData.nice);
