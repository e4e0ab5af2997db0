// The logger's censoring, line by line: credentials and join links at the top level of a line, one
// level down under any key, in request headers, and in a child logger's bindings.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.ts';

const LINK = 'https://classes.example/join/0123456789abcdefSECRET';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ level: 'trace', destination: { write: (line: string) => void lines.push(JSON.parse(line)) } });
  return { logger, lines };
}

describe('log lines', () => {
  it('censor credentials and mask join links at the top level', () => {
    const { logger, lines } = capture();
    logger.info({ apiKey: 'k-1', xApiKey: 'x-1', token: 't-1', password: 'p-1', authorization: 'Basic abc', joinLink: LINK }, 'top');
    expect(lines[0]).toMatchObject({
      apiKey: '[redacted]',
      xApiKey: '[redacted]',
      token: '[redacted]',
      password: '[redacted]',
      authorization: '[redacted]',
      joinLink: `https://classes.example/…(${LINK.length} chars)`,
    });
  });

  it('censor them one level down under any key, and in headers at either level', () => {
    const { logger, lines } = capture();
    const settings = { baseUrl: 'http://remote', apiKey: 'k-2', apiToken: 'a-2', webhookSecret: 'whsec_one', secrets: ['whsec_two'] };
    logger.warn(
      {
        settings,
        row: { batchId: 'b-1', joinMagicLink: LINK },
        headers: { authorization: 'Basic top', 'x-api-key': 'x-top', 'webhook-signature': 'v1,sig-top', accept: 'application/json' },
        req: { headers: { authorization: 'Bearer nested', 'x-api-key': 'x-nested', host: 'h' } },
      },
      'nested',
    );
    const text = JSON.stringify(lines[0]);
    for (const secret of ['k-2', 'a-2', 'SECRET', 'Basic top', 'x-top', 'Bearer nested', 'x-nested', 'whsec_one', 'whsec_two', 'sig-top'])
      expect(text).not.toContain(secret);
    expect(lines[0]).toMatchObject({
      settings: { baseUrl: 'http://remote', apiKey: '[redacted]', apiToken: '[redacted]', webhookSecret: '[redacted]', secrets: '[redacted]' },
      row: { batchId: 'b-1', joinMagicLink: `https://classes.example/…(${LINK.length} chars)` },
      headers: { authorization: '[redacted]', 'x-api-key': '[redacted]', 'webhook-signature': '[redacted]', accept: 'application/json' },
      req: { headers: { authorization: '[redacted]', 'x-api-key': '[redacted]', host: 'h' } },
    });
    // The caller's objects are left as they were.
    expect(settings.apiKey).toBe('k-2');
  });

  it('leave errors and other class instances to their serializers', () => {
    const { logger, lines } = capture();
    logger.error({ err: Object.assign(new Error('boom'), { code: 'E_BOOM' }), at: new Date(0) }, 'failed');
    expect(lines[0]).toMatchObject({ err: { type: 'Error', message: 'boom', code: 'E_BOOM' }, at: '1970-01-01T00:00:00.000Z' });
  });

  it('censor a child logger’s bindings, and leave lines without secrets as they are', () => {
    const { logger, lines } = capture();
    logger
      .child({ account: { name: 'north', apiKey: 'k-3' }, batchId: 'b-2' })
      .info({ from: 'pending', to: 'creating', attempt: 1 }, 'batch pending → creating');
    expect(JSON.stringify(lines[0])).not.toContain('k-3');
    expect(lines[0]).toMatchObject({ account: { name: 'north', apiKey: '[redacted]' }, batchId: 'b-2', from: 'pending', to: 'creating', attempt: 1 });
    expect(lines[0]!.msg).toBe('batch pending → creating');
    // A child of a child keeps both sets of bindings, each censored.
    logger
      .child({ jobId: 'j-1' })
      .child({ remote: { token: 't-4' } })
      .info('grandchild');
    expect(lines[1]).toMatchObject({ jobId: 'j-1', remote: { token: '[redacted]' }, msg: 'grandchild' });
  });
});
