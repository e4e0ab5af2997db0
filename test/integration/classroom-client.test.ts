// The client against the sandbox over real HTTP: every header, every failure classified.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClassroomClient, type ClassroomClient } from '../../src/classroom/client.ts';
import { CredentialsRefusedError, NotSentError, OutcomeUnknownError, RejectedError, ThrottledError, retryAfterOf } from '../../src/classroom/errors.ts';
import { loadConfig } from '../../src/config/config.ts';
import { latestSendMs } from '../../src/ratelimit/limiter.ts';
import { RunStoppedError, SyncError } from '../../src/sync/errors.ts';
import { sandboxOptionsFromConfig, startSandbox } from '../../src/sandbox/index.ts';
import { start, useSandbox } from '../helpers/sandbox.ts';
import { manualClock } from '../helpers/clock.ts';

const sandbox = useSandbox();
let client: ClassroomClient;
// Long enough that a stall of the one event loop the client and the sandbox share is not a timeout
// (only the hang fault waits it out).
const base = loadConfig({ CLASSROOM_TIMEOUT: '2s', SYNC_LEASE: '6s' });
const institute = base.classroom.instituteId;

beforeAll(() => {
  client = createClassroomClient({ ...base.classroom, baseUrl: sandbox.url });
});

const add = (name = 'Algebra') => client.addClass({ name, subject: 'Maths', instituteId: institute });

describe('classroom client', () => {
  it('runs the spec integration order: add → enable link → get full → listing', async () => {
    const { classId } = await add();
    expect(classId).toMatch(/^[0-9a-f]{24}$/);
    expect((await client.getClass(classId)).joinMagicLink).toBe('');
    await client.enableJoinLink(classId);
    const record = await client.getClass(classId);
    expect(record.joinMagicLink).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/classroom\/join\//);
    const listing = await client.listClasses(institute);
    expect(listing.classes.map((c) => c._id)).toContain(classId);
    expect(listing.hiddenClasses).toEqual([]);
  });

  it('accepts the id at the top level as well as at data._id', async () => {
    // The sandbox answers with data._id; the top-level form is covered by the field notes only.
    const { classId } = await add();
    expect(sandbox.store.get(classId)).toBeDefined();
  });

  it('classifies refused credentials as credentials_refused and a refused header as rejected, naming the cause', async () => {
    const wrong = createClassroomClient({ ...base.classroom, baseUrl: sandbox.url, apiKey: 'X'.repeat(32) });
    await expect(wrong.listClasses(institute)).rejects.toSatisfy(
      (e) => e instanceof CredentialsRefusedError && e.kind === 'credentials_refused' && e.sent && e.httpStatus === 401 && /credentials/i.test(e.message),
    );
    const wrongHeader = createClassroomClient({ ...base.classroom, baseUrl: sandbox.url, namespaceHeader: 'x-wise-namespace' });
    await expect(wrongHeader.listClasses(institute)).rejects.toSatisfy(
      (e) => e instanceof RejectedError && e.httpStatus === 403 && /namespace/i.test(e.message),
    );
  });

  it('classifies a refused connection as not sent', async () => {
    const closed = await start();
    await closed.close();
    const nowhere = createClassroomClient({ ...base.classroom, baseUrl: closed.url });
    await expect(nowhere.addClass({ name: 'x', subject: 'y', instituteId: institute })).rejects.toBeInstanceOf(NotSentError);
  });

  it.each([
    ['lostResponse', OutcomeUnknownError, true],
    ['hang', OutcomeUnknownError, true],
    ['error5xxAfterStore', OutcomeUnknownError, true],
    ['bodyError', OutcomeUnknownError, true],
    ['nonJsonBody', OutcomeUnknownError, true],
    ['truncatedBody', OutcomeUnknownError, true],
    ['error5xx', OutcomeUnknownError, false],
    ['throttle', ThrottledError, false],
    ['throttleNoRetryAfter', ThrottledError, false],
    ['bodyRejected', RejectedError, false],
  ] as const)('add-class with fault %s → %s', async (fault, errorClass, stored) => {
    sandbox.faults.enqueue({ operation: 'addClass', fault });
    const error = await add('Faulty').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(errorClass);
    expect(sandbox.state().byName.Faulty ?? 0).toBe(stored ? 1 : 0);
  });

  it('reads Retry-After into the throttled error', async () => {
    sandbox.faults.set({ retryAfterSeconds: 7 });
    sandbox.faults.enqueue({ operation: 'getClass', fault: 'throttle' });
    const error = await client.getClass('0123456789abcdef01234567').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ThrottledError);
    expect((error as ThrottledError).retryAfterMs).toBe(7000);
  });

  it('refuses unsafe ids before sending and URL-encodes safe ones', async () => {
    await expect(client.getClass('../institutes/x')).rejects.toBeInstanceOf(RejectedError);
    await expect(client.getClass('a b')).rejects.toBeInstanceOf(RejectedError);
    const calls = sandbox.state().calls.totalCalls;
    expect(calls).toBe(0);
  });

  it('keeps credentials and headers out of error messages', async () => {
    sandbox.faults.enqueue({ operation: 'addClass', fault: 'lostResponse' });
    const error = (await add('Secret check').catch((e: unknown) => e)) as Error;
    const text = JSON.stringify({ message: error.message, ...(error as OutcomeUnknownError).toSafeJSON() });
    expect(text).not.toContain(base.classroom.apiKey);
    expect(text).not.toContain(base.classroom.xApiKey);
    expect(text).not.toContain(Buffer.from(`${base.classroom.userId}:${base.classroom.apiKey}`).toString('base64'));
  });
});

describe('classroom client, Retry-After on a server error', () => {
  it('is carried by the outcome-unknown error of a 503, and found through the errors that wrap it', async () => {
    // The sandbox sends Retry-After only with a 429, as the live service might; a 503 gets one here.
    const server = createServer((_req, res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '3' }).end(JSON.stringify({ status: 503, message: 'Unavailable' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = createClassroomClient({ ...base.classroom, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      const error = await client.getClass('0123456789abcdef01234567').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect((error as OutcomeUnknownError).retryAfterMs).toBe(3_000);
      // As the sync layer and the queue wrap it: a SyncError, the run's RunStoppedError, BullMQ's Error.
      const stopped = new RunStoppedError(new SyncError('outcome_unknown', 'http_503', 'get-class failed', { cause: error }), 'link_enabled');
      expect(retryAfterOf(new Error('attempt failed', { cause: stopped }))).toBe(3_000);
      expect(retryAfterOf(new Error('no remote behind it'))).toBeUndefined();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('classroom client, redirects', () => {
  it('classifies a redirected add-class as outcome unknown and does not follow it', async () => {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(302, { location: '/elsewhere' }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const client = createClassroomClient({ ...base.classroom, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
      const error = await client.addClass({ name: 'Moved', subject: 'Maths', instituteId: institute }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect((error as OutcomeUnknownError).httpStatus).toBe(302);
      expect(seen).toEqual([`POST ${base.classroom.addClassPath}`]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('classroom client, ports', () => {
  it('reaches a base URL on a port the global fetch refuses (its "bad ports")', async () => {
    // fetch refuses these before opening a socket; the client does not use fetch's transport.
    let blocked: Awaited<ReturnType<typeof start>> | undefined;
    for (const port of [10080, 6665, 6666, 6667, 6668, 6669, 6697]) {
      blocked = await startSandbox({ ...sandboxOptionsFromConfig(base), seed: 42 }, { port }).catch(() => undefined);
      if (blocked) break;
    }
    if (!blocked) throw new Error('no port fetch refuses is free on this machine (tried 10080, 6665-6669, 6697)');
    try {
      const port = Number(new URL(blocked.url).port);
      await expect(fetch(`${blocked.url}/`)).rejects.toThrow();
      const client = createClassroomClient({ ...base.classroom, baseUrl: blocked.url });
      const { classId } = await client.addClass({ name: `Port ${port}`, subject: 'Maths', instituteId: institute });
      expect(blocked.store.get(classId)).toBeDefined();
    } finally {
      await blocked.close();
    }
  });
});

describe('classroom client, the last check before a request', () => {
  /** A client whose rate-limit hook records when it granted each slot. */
  /**
   * A client whose rate-limit slots are recorded, on a clock the test moves: a slow check is one
   * that moves it (the client reads a slot's time and a check's length by it), so none sleeps.
   */
  function slotted(latestSendMs?: number, wakesLateBy?: number) {
    const events: string[] = [];
    const clock = manualClock();
    const c = createClassroomClient(
      { ...base.classroom, baseUrl: sandbox.url },
      {
        ...(latestSendMs === undefined ? {} : { latestSendMs }),
        beforeCall: async (_operation, lane) => {
          events.push(`slot:${lane}`);
          if (wakesLateBy === undefined) return undefined;
          // A limiter whose sleep ended this late: its slot came due before the wait returned.
          const dueAt = clock.now();
          clock.jump(wakesLateBy);
          return dueAt;
        },
        clock,
      },
    );
    return { client: c, events, clock };
  }
  const input = { name: 'Checked', subject: 'Maths', instituteId: institute };

  it('sends after one slot and one check when the check is quick', async () => {
    const { client: c, events } = slotted();
    await c.addClass(input, { lane: 'live', beforeSend: async () => void events.push('check') });
    expect(events).toEqual(['slot:live', 'check']);
    expect(sandbox.state().calls.byOperation.addClass?.calls).toBe(1);
  });

  it('takes a fresh slot, and checks again, when the check outlasts the rate limit headroom (1.2 s)', async () => {
    const { client: c, events, clock } = slotted();
    let checks = 0;
    const slowFirst = async () => {
      events.push('check');
      checks += 1;
      if (checks === 1) clock.jump(1_201);
    };
    const { classId } = await c.addClass(input, { lane: 'live', beforeSend: slowFirst });
    // The second slot is for a batch under way: its add-class intent is written.
    expect(events).toEqual(['slot:live', 'check', 'slot:under_way', 'check']);
    expect(sandbox.state().calls.byOperation.addClass?.calls).toBe(1);
    expect(sandbox.store.get(classId)).toBeDefined();
  });

  it('does not when the check ends within the headroom', async () => {
    const { client: c, events, clock } = slotted();
    await c.addClass(input, { lane: 'live', beforeSend: async () => void clock.jump(1_200) });
    expect(events).toEqual(['slot:live']);
  });

  it('uses a slot reserved earlier when it is on time, and takes a fresh one for a slot that came due more than 1.2 s ago', async () => {
    const { client: c, events, clock } = slotted();
    const check = async () => void events.push('check');
    clock.jump(10_000);
    await c.addClass(input, { lane: 'under_way', slotReady: Promise.resolve(clock.now() - 200), beforeSend: check });
    expect(events).toEqual(['check']);
    events.length = 0;
    // A run whose PostgreSQL statements took that long after its slot came due: a fresh slot before the check, one check.
    await c.addClass(input, { lane: 'under_way', slotReady: Promise.resolve(clock.now() - 1_500), beforeSend: check });
    expect(events).toEqual(['slot:under_way', 'check']);
    expect(sandbox.state().calls.byOperation.addClass?.calls).toBe(2);
  });

  it("holds the check to the remote's own window: 2% of a 10 s window is 200 ms", async () => {
    const { client: c, events, clock } = slotted(latestSendMs(10_000));
    let checks = 0;
    const slowFirst = async () => {
      events.push('check');
      checks += 1;
      // Well inside a minute's 1.2 s, well past a 10 s window's 200 ms.
      if (checks === 1) clock.jump(500);
    };
    await c.addClass(input, { lane: 'live', beforeSend: slowFirst });
    expect(events).toEqual(['slot:live', 'check', 'slot:under_way', 'check']);
    // The same check under a minute's window is on time: one slot.
    const minute = slotted();
    await minute.client.addClass(input, { lane: 'live', beforeSend: async () => void minute.clock.jump(500) });
    expect(minute.events).toEqual(['slot:live']);
  });

  it('counts a slot slept past as late: a late wake-up and a check that together outlast the headroom take a fresh slot', async () => {
    // Woken 1 s after the slot, then a 0.3 s check: each within 1.2 s, together past it.
    const { client: c, events, clock } = slotted(undefined, 1_000);
    let checks = 0;
    const check = async () => {
      events.push('check');
      checks += 1;
      if (checks === 1) clock.jump(300);
    };
    await c.addClass(input, { lane: 'live', beforeSend: check });
    expect(events).toEqual(['slot:live', 'check', 'slot:under_way', 'check']);
  });

  it('sends a second slow check as it is, rather than never', async () => {
    const { client: c, events, clock } = slotted();
    const slow = async () => {
      events.push('check');
      clock.jump(1_300);
    };
    await c.addClass(input, { lane: 'live', beforeSend: slow });
    expect(events).toEqual(['slot:live', 'check', 'slot:under_way', 'check']);
    expect(sandbox.state().calls.byOperation.addClass?.calls).toBe(1);
  });
});
