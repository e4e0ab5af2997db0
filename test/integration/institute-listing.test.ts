// One listing settles many (src/sync/institute-listing.ts): callers of one institute share a listing
// call in flight, a fresh listing read at or after their `notBefore`, and, across processes, the copy
// another process published in Redis; a failure of the remote is every waiting caller's. Real
// sandbox, real Redis: the counts are the sandbox's own, and "processes" are separate instances on
// separate Redis connections, as two worker processes have.
import { beforeEach, describe, expect, it } from 'vitest';
import { isClassroomError } from '../../src/classroom/errors.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { budgetKey } from '../../src/ratelimit/keys.ts';
import { createRedis } from '../../src/redis/connection.ts';
import { type InstituteListings, type ListingRequest, type SharedListing, accountListings, createInstituteListings } from '../../src/sync/institute-listing.ts';
import { createListingCache } from '../../src/sync/listing-cache.ts';
import { REDIS_URL, waitFor } from '../helpers/harness.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { useHarness } from '../helpers/use-harness.ts';

const { h, defer } = useHarness();
const logger = createLogger({ level: 'silent' });

beforeEach(() => h.sandbox.faults.clear());

const listCalls = () => h.sandbox.state({ classes: false }).calls.byOperation.listClasses?.calls ?? 0;
const owner = () => ({ queuePrefix: h.config.queuePrefix, classroom: h.config.accounts[0]!.classroom });

/** Every listing request that left, in order, by the caller's name. */
let sent: string[] = [];
beforeEach(() => {
  sent = [];
});

/** A caller as a run is one: its `notBefore`, the epoch clock, the real client's listing call (noted as it leaves). */
function caller(name: string, notBefore = Date.now(), extra: Partial<ListingRequest> = {}): ListingRequest {
  const instituteId = h.config.classroom.instituteId;
  return {
    instituteId,
    notBefore,
    now: () => Date.now(),
    read: (mark) =>
      h.runtime.remotes.default.classroom.listClasses(
        instituteId,
        {},
        {
          beforeSend: async () => {
            sent.push(name);
            mark();
          },
        },
      ),
    ...extra,
  };
}

/** A moment, so that the epoch clock has moved past a `readAt` just taken. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

/** A second process's Redis connection, closed at teardown. */
function secondRedis(url = REDIS_URL) {
  const redis = createRedis(url, 'worker');
  defer(() => redis.disconnect());
  return redis;
}

async function ready(redis: ReturnType<typeof createRedis>) {
  await waitFor(() => redis.status === 'ready', 'the Redis connection to be ready');
  return redis;
}

describe('within one process', () => {
  it('callers arriving while a listing call is in flight share it; one of them records its lag samples', async () => {
    const listings = createInstituteListings();
    h.sandbox.faults.set({ latencyMs: 300 });
    const before = listCalls();
    const got = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((name) => listings.get(caller(name, Date.now() - 1_000))));
    expect(listCalls() - before).toBe(1);
    expect(sent).toEqual(['a']);
    expect(new Set(got.map((g) => g.readAt)).size).toBe(1);
    expect(got.map((g) => g.takeSamples()).filter(Boolean)).toHaveLength(1);
  });

  it('a finished listing is taken only by a caller whose notBefore it was read at or after', async () => {
    const listings = createInstituteListings({ freshMs: 60_000 });
    const first = await listings.get(caller('first'));
    const same = await listings.get(caller('same', first.readAt));
    await tick();
    const later = await listings.get(caller('later', first.readAt + 1));
    expect(sent).toEqual(['first', 'later']);
    expect(same.readAt).toBe(first.readAt);
    expect(later.readAt).toBeGreaterThanOrEqual(first.readAt + 1);
    // The newest listing serves every caller it was read late enough for.
    const third = await listings.get(caller('third', first.readAt));
    expect(third.readAt).toBe(later.readAt);
    expect(sent).toEqual(['first', 'later']);
  });

  it('callers whose notBefore is after the call in flight was sent wait for it, then share the next one', async () => {
    const listings = createInstituteListings();
    h.sandbox.faults.set({ latencyMs: 300 });
    const first = listings.get(caller('first', Date.now() - 1_000));
    await waitFor(() => sent.length === 1, 'the first call to leave');
    const notBefore = Date.now() + 1;
    await tick();
    const late = await Promise.all(['late1', 'late2', 'late3'].map((name) => listings.get(caller(name, notBefore))));
    expect(sent).toEqual(['first', 'late1']);
    expect(new Set(late.map((l) => l.readAt)).size).toBe(1);
    expect(late[0]!.readAt).toBeGreaterThanOrEqual(notBefore);
    expect((await first).readAt).toBeLessThan(notBefore);
  });

  it('a listing older than the freshness window is read again, and a batch judged on it waits until then', async () => {
    const listings = createInstituteListings({ freshMs: 1_000 });
    const first = await listings.get(caller('first', Date.now() - 1_000));
    expect(first.retryInMs(50, first.readAt)).toBe(1_001);
    expect(first.retryInMs(5_000, first.readAt)).toBe(5_000);
    // A caller whose clock is past the window, as a batch that waited `retryInMs` is.
    const stale = await listings.get(caller('stale', first.readAt, { now: () => Date.now() + 1_001 }));
    expect(sent).toEqual(['first', 'stale']);
    expect(stale.readAt).toBeGreaterThan(first.readAt);
  });

  it('a failed listing is the failure of every caller waiting on it; the next caller reads again', async () => {
    const listings = createInstituteListings();
    h.sandbox.faults.set({ latencyMs: 200 });
    h.sandbox.faults.enqueue({ operation: 'listClasses', fault: 'bodyRejected' });
    const before = listCalls();
    const failed = await Promise.allSettled(['a', 'b', 'c'].map((name) => listings.get(caller(name, Date.now() - 1_000))));
    expect(listCalls() - before).toBe(1);
    for (const outcome of failed) {
      expect(outcome.status).toBe('rejected');
      const reason = (outcome as PromiseRejectedResult).reason;
      expect(isClassroomError(reason) && reason.kind).toBe('rejected');
    }
    await listings.get(caller('next'));
    expect(listCalls() - before).toBe(2);
  });

  it("a failure of the reader's own (its run stopped) is not shared: a caller waiting on it reads for itself", async () => {
    const listings = createInstituteListings();
    let fail!: (error: Error) => void;
    const stopping = caller('stopping', Date.now() - 1_000, {
      read: (mark) => {
        mark();
        return new Promise((_, reject) => (fail = reject));
      },
      stopped: () => true,
    });
    const mine = listings.get(stopping);
    const other = listings.get(caller('other', Date.now() - 1_000));
    fail(new Error('the lease was lost'));
    await expect(mine).rejects.toThrow('the lease was lost');
    const got = await other;
    expect(sent).toEqual(['other']);
    expect(got.takeSamples()).toBe(true);
  });
});

describe('across processes, through Redis', () => {
  const key = () => `${budgetKey(owner())}:listing:${h.config.classroom.instituteId}`;
  // Each test starts with no copy and no lock of the last one's.
  beforeEach(async () => {
    await h.runtime.redis.del(key(), `${budgetKey(owner())}:listing-lock:${h.config.classroom.instituteId}`);
  });
  const twoProcesses = async (): Promise<[InstituteListings, InstituteListings]> => [
    accountListings(h.runtime.redis, owner(), logger),
    accountListings(await ready(secondRedis()), owner(), logger),
  ];

  it("a second process takes the first one's copy, kept under the account's rate-limit key, instead of reading", async () => {
    const [one, two] = await twoProcesses();
    const first = await one.get(caller('one', Date.now() - 1_000));
    const copy = await waitForCopy(two, first);
    expect(sent).toEqual(['one']);
    expect(copy.readAt).toBe(Math.floor(first.readAt));
    expect([...copy.listed].sort()).toEqual([...first.listed].sort());
    // Its lag samples were the reader's to record.
    expect(copy.takeSamples()).toBe(false);
    expect(await h.runtime.redis.exists(`${budgetKey(owner())}:listing:${h.config.classroom.instituteId}`)).toBe(1);
  });

  it('while one process reads, another waits for its copy rather than reading too', async () => {
    const [one, two] = await twoProcesses();
    h.sandbox.faults.set({ latencyMs: 300 });
    const before = listCalls();
    const first = one.get(caller('one', Date.now() - 1_000));
    await waitFor(() => sent.length === 1, 'the first process to send its call');
    const second = await two.get(caller('two', Date.now() - 1_000));
    expect(listCalls() - before).toBe(1);
    expect(sent).toEqual(['one']);
    expect(second.readAt).toBe(Math.floor((await first).readAt));
  });

  it("a copy read before a caller's notBefore is not taken: that caller reads", async () => {
    const [one, two] = await twoProcesses();
    const first = await one.get(caller('one', Date.now() - 1_000));
    await tick();
    const later = await two.get(caller('two', first.readAt + 1));
    expect(sent).toEqual(['one', 'two']);
    expect(later.readAt).toBeGreaterThan(first.readAt);
  });

  it('a listing too large to copy is not stored: the institute is marked, and each process reads for itself', async () => {
    const tiny = (redis: ReturnType<typeof createRedis>) =>
      createInstituteListings({ cache: createListingCache({ redis, accountKey: `${budgetKey(owner())}:tiny`, ttlMs: 1_000, maxChars: 10 }) });
    await h.runtime.remotes.default.classroom.addClass({ name: 'Large enough', subject: 'Art', instituteId: h.config.classroom.instituteId, extra: {} });
    const one = tiny(h.runtime.redis);
    const two = tiny(await ready(secondRedis()));
    await one.get(caller('one', Date.now() - 1_000));
    await waitFor(
      async () => (await h.runtime.redis.hget(`${budgetKey(owner())}:tiny:listing:${h.config.classroom.instituteId}`, 'tooLarge')) === '1',
      'the mark',
    );
    await two.get(caller('two', Date.now() - 1_000));
    expect(sent).toEqual(['one', 'two']);
  });
});

describe('a Redis that fails is a miss: the listing is read as if there were no copy', () => {
  it('a command Redis refuses (the key holds something else)', async () => {
    const accountKey = `${budgetKey(owner())}:wrongtype`;
    await h.runtime.redis.set(`${accountKey}:listing:${h.config.classroom.instituteId}`, 'not a hash');
    const errors: unknown[] = [];
    const cache = createListingCache({ redis: h.runtime.redis, accountKey, ttlMs: 1_000, onError: (error) => errors.push(error) });
    const got = await createInstituteListings({ cache }).get(caller('alone', Date.now() - 1_000));
    expect(sent).toEqual(['alone']);
    expect(got.listing.classes).toBeInstanceOf(Array);
    expect(errors.length).toBeGreaterThan(0);
  });

  it('a connection that was cut, and one that stopped answering', async () => {
    const [host, port] = new URL(REDIS_URL).host.split(':');
    const proxy = await startTcpProxy({ host: host!, port: Number(port ?? 6379) });
    defer(() => proxy.close());
    const redis = await ready(secondRedis(`redis://127.0.0.1:${proxy.port}`));
    const errors: unknown[] = [];
    const cache = createListingCache({ redis, accountKey: `${budgetKey(owner())}:proxied`, ttlMs: 1_000, onError: (error) => errors.push(error) });
    const listings = createInstituteListings({ cache });
    proxy.freeze();
    await listings.get(caller('frozen', Date.now() - 1_000));
    // Bounded: the command that got no answer is given up on.
    expect(errors.map((error) => (error as Error).name)).toContain('TimeoutError');
    proxy.thaw();
    proxy.cut();
    const notBefore = Date.now() + 1;
    await tick();
    await listings.get(caller('cut', notBefore));
    expect(sent).toEqual(['frozen', 'cut']);
  });
});

/** The copy as the second process finds it (the first publishes it just after its answer, unawaited). */
async function waitForCopy(two: InstituteListings, first: SharedListing): Promise<SharedListing> {
  await waitFor(async () => (await h.runtime.redis.hget(`${budgetKey(owner())}:listing:${h.config.classroom.instituteId}`, 'readAt')) !== null, 'the copy');
  return two.get(caller('two', first.readAt - 1));
}
