// The `worker started` line names the remote it syncs with, but a base URL may carry a user name and
// password (or a signature in its query): the line shows scheme, host and path only.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { startTestWorker } from './http-helpers.ts';

const PASSWORD = 'Url-Password-7f3a9c1e';
const QUERY_SECRET = 'Url-Query-Signature-5d1e';

const { h, defer } = useHarness();

describe('worker started', () => {
  it('logs the remote without the user name, password or query of CLASSROOM_BASE_URL', async () => {
    const chunks: string[] = [];
    const logger = createLogger({ level: 'trace', destination: { write: (line: string) => void chunks.push(line) } });
    const sandbox = new URL(h.sandbox.url);
    const baseUrl = `${sandbox.protocol}//svc-user:${PASSWORD}@${sandbox.host}/api?sig=${QUERY_SECRET}`;
    const worker = await startTestWorker(h, { CLASSROOM_BASE_URL: baseUrl }, { logger });
    defer(() => worker.stop());

    const lines = chunks.flatMap((chunk) => chunk.split('\n')).filter(Boolean);
    const started = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.msg === 'worker started');
    expect(started?.remote).toBe(`${sandbox.protocol}//${sandbox.host}/api`);
    const text = chunks.join('');
    for (const secret of [PASSWORD, QUERY_SECRET, 'svc-user']) expect(text.includes(secret), `${secret} is in the logs`).toBe(false);
  });
});
