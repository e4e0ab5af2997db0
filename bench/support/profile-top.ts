// Where a CPU profile's time goes: `tsx bench/support/profile-top.ts FILE.cpuprofile [N]` prints
// the top N functions by self time, and self time summed by package (or our own file), from a
// profile written by `node --cpu-prof` (e.g. `npm run bench:cost -- --profile DIR`).
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** `pg`, `bullmq`, `src/sync/machine.ts`, `node:internal/…`, or `(program)` / `(garbage collector)`. */
export function ownerOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const own = /\/work\/[^/]+\/((?:src|bench|bin)\/.*)$/.exec(url) ?? /((?:src|bench|bin)\/[^/]+(?:\/[^/]+)*)$/.exec(url);
  if (own) return own[1]!;
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return url;
}

/**
 * Native frames that are system calls writing to a socket. The profile samples by wall clock, so
 * their share includes time the process was not running (on a busy machine, a write to loopback
 * wakes the receiver, which may run first): they get a line of their own, not a package's.
 */
const SOCKET_WRITES = new Set(['writev', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString', 'writeBuffer', 'writeString']);

/** Our own code or a package: where time spent in Node's internals or native code is charged. */
const isResponsible = (owner: string) => !owner.startsWith('node:') && !owner.startsWith('(');

export function summarize(
  profile: Profile,
  top = 25,
): { totalMs: number; byFunction: [string, number][]; byOwner: [string, number][]; byResponsible: [string, number][] } {
  const self = new Map<number, number>();
  for (const [i, id] of profile.samples.entries()) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const parent = new Map<number, Node>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parent.set(child, node);
  }
  const byFunction = new Map<string, number>();
  const byOwner = new Map<string, number>();
  const byResponsible = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0;
    if (!us) continue;
    total += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const owner = ownerOf(url, functionName);
    const key = `${functionName || '(anonymous)'}  ${owner}${url ? `:${lineNumber + 1}` : ''}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byOwner.set(owner, (byOwner.get(owner) ?? 0) + us);
    // Native and node: frames are charged to the nearest package or file of ours up the stack.
    let frame: Node | undefined = node;
    let responsible = owner;
    while (frame && !isResponsible(ownerOf(frame.callFrame.url, frame.callFrame.functionName))) frame = parent.get(frame.id);
    if (frame) responsible = ownerOf(frame.callFrame.url, frame.callFrame.functionName);
    if (!url && SOCKET_WRITES.has(functionName)) responsible = '(socket writes, wall clock)';
    byResponsible.set(responsible, (byResponsible.get(responsible) ?? 0) + us);
  }
  const sorted = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, v]) => [k, v / 1000] as [string, number]);
  return { totalMs: total / 1000, byFunction: sorted(byFunction), byOwner: sorted(byOwner), byResponsible: sorted(byResponsible) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: tsx bench/support/profile-top.ts FILE.cpuprofile [N]');
  const { totalMs, byFunction, byOwner, byResponsible } = summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(process.argv[3] ?? 25));
  const pct = (ms: number) => `${((100 * ms) / totalMs).toFixed(1).padStart(5)} %`;
  console.log(`sampled ${totalMs.toFixed(0)} ms\n\nself time by package / file:`);
  for (const [k, ms] of byOwner) console.log(`${pct(ms)}  ${ms.toFixed(0).padStart(7)} ms  ${k}`);
  console.log('\nself time charged to the nearest package or file of ours up the stack:');
  for (const [k, ms] of byResponsible) console.log(`${pct(ms)}  ${ms.toFixed(0).padStart(7)} ms  ${k}`);
  console.log('\nself time by function:');
  for (const [k, ms] of byFunction) console.log(`${pct(ms)}  ${ms.toFixed(0).padStart(7)} ms  ${k}`);
}
