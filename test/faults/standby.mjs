// A standby worker process (test/faults/standbys.ts): loaded with `node --import` ahead of the CLI
// (dist/cli/main.js worker), it loads the worker's modules, which is most of what a worker's start
// costs, then waits for one line on stdin: the environment to run with, as JSON. Only then does the
// CLI run, as it would have from the start (it reads its configuration then). Meanwhile the process
// holds no connection and no job. Stdin closed without that line (the suite is done with it, or its
// test process died): it exits. Plain JavaScript: `node` runs it as it is.
import { isMainThread } from 'node:worker_threads';
import { pathToFileURL } from 'node:url';

// Threads the worker starts (its webhook delivery) inherit --import: they run as they would.
if (isMainThread) {
  const cli = pathToFileURL(process.argv[1]);
  // Warming only: a module that is not where it was found last is loaded by the CLI itself.
  await Promise.all(['./index.js', '../commands/worker.js'].map((module) => import(new URL(module, cli)).catch(() => undefined)));
  const line = await new Promise((resolve) => {
    let text = '';
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve(text.slice(0, text.indexOf('\n')));
    });
    process.stdin.on('end', () => resolve(undefined));
  });
  if (line === undefined) process.exit(0);
  process.stdin.destroy();
  Object.assign(process.env, JSON.parse(line));
}
