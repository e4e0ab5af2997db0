// examples/webhooks/: the receivers docs/webhooks.md shows, as a user runs them. The Node.js one runs
// for real against a worker (node, node:http and the standardwebhooks package, nothing of ours): it
// prints the verified batch.synced with the stored class id, and answers a wrong signature 400. The
// Python one is checked as far as this machine allows (its reference library is not installed here,
// and nothing installs it): its syntax always, a run only where `standardwebhooks` imports. The page
// quotes both files exactly.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { publishBatches } from '../../src/intake/publish.ts';
import { signMessage } from '../../src/webhooks/sign.ts';
import { untilSynced } from '../helpers/batches.ts';
import { ROOT } from '../helpers/cli.ts';
import { publishDepsOf, waitFor } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { newSecret } from '../helpers/webhook-receiver.ts';
import { startTestWorker } from './http-helpers.ts';

const NODE_RECEIVER = join(ROOT, 'examples/webhooks/receiver.mjs');
const PYTHON_RECEIVER = join(ROOT, 'examples/webhooks/receiver.py');

interface Printed {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, any>;
}

interface RunningReceiver {
  url: string;
  /** The JSON lines it printed on stdout so far, parsed. */
  printed(): Printed[];
  stderr(): string;
}

const children = new Set<ChildProcess>();

/** Kills a receiver and anything it started (its own process group); harmless once it has ended. */
function kill(child: ChildProcess): void {
  children.delete(child);
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}

/**
 * Starts a receiver on a free port (PORT=0) with `secret`, and resolves once it says on stderr which
 * port it listens on; rejects if it ends first. Its environment is only what it needs.
 */
function startReceiver(command: string, args: string[], secret: string, env: Record<string, string> = {}): Promise<RunningReceiver> {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', WEBHOOK_SECRET: secret, PORT: '0', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      const port = /listening on port (\d+)/.exec(stderr)?.[1];
      if (port) {
        resolve({
          url: `http://127.0.0.1:${port}/hooks/classroom-sync`,
          // Whole lines only: the last piece is empty, or a line still being written.
          printed: () =>
            stdout
              .split('\n')
              .slice(0, -1)
              .map((line) => JSON.parse(line) as Printed),
          stderr: () => stderr,
        });
      }
    });
    child.on('error', reject);
    child.on('close', (code, signal) => reject(new Error(`${command} ${args.join(' ')} ended (${code ?? signal}) before listening\nstderr:\n${stderr}`)));
  });
}

/** A message as a worker would send it, signed with `secrets`. */
function signed(secrets: string[], messageId: string, data: Record<string, unknown>) {
  const body = JSON.stringify({ type: 'batch.synced', timestamp: new Date().toISOString(), data });
  return { body, headers: { ...signMessage(secrets, messageId, body), 'content-type': 'application/json' } };
}

const post = (url: string, message: { body: string; headers: Record<string, string> }) =>
  fetch(url, { method: 'POST', body: message.body, headers: message.headers }).then(async (r) => ({ status: r.status, text: await r.text() }));

/** The fenced code blocks of a Markdown page, by language. */
function codeBlocks(markdown: string, language: string): string[] {
  return [...markdown.matchAll(new RegExp(`^\`\`\`${language}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => m[1]!);
}

function python3(args: string[], env: Record<string, string> = {}) {
  return spawnSync('python3', args, { cwd: ROOT, encoding: 'utf8', env: { PATH: process.env.PATH ?? '', ...env } });
}
const hasPython = !python3(['--version']).error;
const hasPythonLibrary = hasPython && python3(['-c', 'import standardwebhooks.webhooks']).status === 0;

const { h, defer } = useHarness();
defer(() => {
  for (const child of [...children]) kill(child);
});

describe('examples/webhooks/receiver.mjs (Node.js)', () => {
  const secret = newSecret();
  let receiver: RunningReceiver;
  beforeAll(async () => {
    receiver = await startReceiver(process.execPath, [NODE_RECEIVER], secret);
  });

  it('prints the batch.synced a worker sends, verified, with the class id and join link stored for the batch', async () => {
    const worker = await startTestWorker(h, { WEBHOOK_URL: receiver.url, WEBHOOK_SECRET: secret });
    defer(() => worker.stop());

    await publishBatches(publishDepsOf(h), [{ batchId: 'example-1', name: 'Example receiver class', subject: 'Maths' }]);
    const row = await untilSynced(h, 'example-1');
    const [line] = await waitFor(() => (receiver.printed().length > 0 ? receiver.printed() : undefined), 'the receiver to print a message');

    expect(row.classId).toBeTruthy();
    expect(line).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      type: 'batch.synced',
      timestamp: expect.any(String),
      data: {
        instituteId: row.instituteId,
        batchId: 'example-1',
        state: 'synced',
        classId: row.classId,
        joinLink: row.joinLink,
        syncedAt: row.syncedAt?.toISOString(),
      },
    });
    expect(receiver.printed()).toHaveLength(1);
  });

  it('answers 400 to a wrong signature and to missing headers, printing nothing; 204 once per message id', async () => {
    const before = receiver.printed().length;
    const forged = signed([newSecret()], 'msg_forged', { batchId: 'example-1', classId: 'not-ours' });
    expect(await post(receiver.url, forged)).toMatchObject({ status: 400, text: expect.stringContaining('No matching signature found') });
    const unsigned = { body: forged.body, headers: { 'content-type': 'application/json' } };
    expect((await post(receiver.url, unsigned)).status).toBe(400);
    const tampered = signed([secret], 'msg_tampered', { batchId: 'example-1' });
    expect((await post(receiver.url, { ...tampered, body: tampered.body.replace('example-1', 'example-2') })).status).toBe(400);
    expect(receiver.printed()).toHaveLength(before);
    expect(receiver.stderr()).toContain('rejected a request: No matching signature found');

    // Mid-rotation a message carries two signatures; the receiver knows one. Sent twice, printed once.
    const rotated = signed([newSecret(), secret], 'msg_rotated', { batchId: 'example-1' });
    expect((await post(receiver.url, rotated)).status).toBe(204);
    expect((await post(receiver.url, rotated)).status).toBe(204);
    expect(receiver.printed().slice(before)).toEqual([expect.objectContaining({ id: 'msg_rotated', data: { batchId: 'example-1' } })]);
  });
});

describe('examples/webhooks/receiver.py (Python)', () => {
  it('compiles (python3 -m py_compile)', (context) => {
    context.skip(!hasPython, 'python3 is not on PATH: the syntax of examples/webhooks/receiver.py is not checked');
    const cache = mkdtempSync(join(tmpdir(), 'receiver-py-'));
    try {
      // The bytecode goes to a scratch directory, not to examples/webhooks/__pycache__.
      const result = python3(['-m', 'py_compile', PYTHON_RECEIVER], { PYTHONPYCACHEPREFIX: cache });
      expect(result.status, result.stderr).toBe(0);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  it('imports the reference library as its documentation says: from standardwebhooks.webhooks import Webhook', () => {
    expect(readFileSync(PYTHON_RECEIVER, 'utf8')).toMatch(/^from standardwebhooks\.webhooks import Webhook, WebhookVerificationError$/m);
  });

  it('verifies a signed message and refuses a forged one (where the standardwebhooks PyPI package is installed)', async (context) => {
    context.skip(
      !hasPythonLibrary,
      'the standardwebhooks PyPI package is not installed for python3 (nothing installs it here): examples/webhooks/receiver.py is not run',
    );
    const secret = newSecret();
    const receiver = await startReceiver('python3', [PYTHON_RECEIVER], secret, { PYTHONDONTWRITEBYTECODE: '1' });
    const message = signed([newSecret(), secret], 'msg_python', { batchId: 'example-py' });
    expect((await post(receiver.url, message)).status).toBe(204);
    expect((await post(receiver.url, message)).status).toBe(204);
    expect((await post(receiver.url, signed([newSecret()], 'msg_forged', { batchId: 'example-py' }))).status).toBe(400);
    await waitFor(() => receiver.printed().length > 0 || undefined, 'the Python receiver to print the message');
    expect(receiver.printed()).toEqual([expect.objectContaining({ id: 'msg_python', type: 'batch.synced', data: { batchId: 'example-py' } })]);
  });
});

describe('docs/webhooks.md', () => {
  const page = readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8');

  it('quotes both receivers exactly as they are in examples/webhooks/', () => {
    expect(codeBlocks(page, 'js'), 'a ```js block equal to examples/webhooks/receiver.mjs').toContain(readFileSync(NODE_RECEIVER, 'utf8'));
    expect(codeBlocks(page, 'python'), 'a ```python block equal to examples/webhooks/receiver.py').toContain(readFileSync(PYTHON_RECEIVER, 'utf8'));
  });

  it("shows an example of every type the outbox trigger writes, with exactly the trigger's data fields", () => {
    const trigger = readFileSync(join(ROOT, 'migrations/0007_webhook_outbox.sql'), 'utf8');
    const types = [...trigger.matchAll(/kind := '([a-z_.]+)'/g)].map((m) => m[1]!);
    expect(types.length).toBeGreaterThanOrEqual(5);
    const examples = codeBlocks(page, 'json')
      .map((block) => JSON.parse(block) as { type?: string; timestamp?: string; data?: Record<string, unknown> })
      .filter((example) => typeof example.type === 'string');
    expect(examples.map((e) => e.type).sort()).toEqual([...types].sort());
    for (const example of examples) {
      expect(Object.keys(example), example.type).toEqual(['type', 'timestamp', 'data']);
      expect(new Date(example.timestamp!).toISOString(), example.type).toBe(example.timestamp);
      // The trigger's own field list for this type: the common three, plus what its branch adds.
      const branch = trigger.slice(trigger.indexOf(`kind := '${example.type}'`)).split(/ELSIF|ELSE/)[0]!;
      const fields = ['instituteId', 'batchId', 'state', ...[...branch.matchAll(/'([a-z][a-zA-Z]*)', /g)].map((m) => m[1]!)];
      expect(Object.keys(example.data!).sort(), example.type).toEqual([...new Set(fields)].sort());
    }
  });
});
