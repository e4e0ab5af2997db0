// Fuzzing event intake: thousands of malformed batch-created events, interleaved with valid ones,
// through publishBatches and through the NDJSON reader. Every bad one is rejected with a field and
// a reason (the offending key, when a valid event was broken in one place); every good one syncs
// to exactly one class; nothing rejected reaches batch_classes. Replay with FC_SEED / FC_PATH.
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { enqueueNdjson } from '../../src/commands/enqueue.ts';
import { batchClasses } from '../../src/db/schema/index.ts';
import { type PublishOutcome, publishBatches } from '../../src/intake/publish.ts';
import type { FieldProblem } from '../../src/intake/schema.ts';
import { untilAllSynced } from '../helpers/batches.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { useHarnessWithWorker } from '../helpers/use-harness.ts';
import { depth } from '../helpers/depth.ts';

const FIELDS = ['batchId', 'name', 'subject'] as const;
const RESERVED = ['_id', 'classId', 'joinMagicLink', 'namespace', 'userId'] as const;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the fuzzer looks for control characters on purpose
const CONTROL = /[\u0000-\u001f\u007f]/g;

/** A valid event, before it gets its unique batch id and name suffix. */
interface Base {
  tag: string;
  name: string;
  subject: string;
  institute: 'omit' | 'default';
  extra: Record<string, unknown>;
}
/** How a valid event is broken, as data (so a counterexample prints readably). */
type Mutation =
  | { kind: 'missing'; key: (typeof FIELDS)[number] }
  | { kind: 'set'; key: string; value: unknown; why: string }
  | { kind: 'extra'; key: string; value: unknown; why: string }
  | { kind: 'replace'; value: unknown; why: string; field: string | undefined };
interface Item {
  base: Base;
  mutation: Mutation | undefined;
}

const text = (maxGraphemes: number, maxLength: number) =>
  fc
    .string({ unit: 'grapheme', minLength: 1, maxLength: maxGraphemes })
    .map((s) => s.replace(CONTROL, '').trim())
    .filter((s) => s.length > 0 && s.length <= maxLength);
const solid = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 8 }).map((s) => s.replace(/\s/g, '') || 'x');
const extraKey = fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 10 }).map((k) => `x${k}`);
const baseArb: fc.Arbitrary<Base> = fc.record({
  tag: text(20, 60),
  name: text(30, 120),
  subject: text(30, 150),
  institute: fc.constantFrom('omit' as const, 'default' as const),
  // fast-check likes "__proto__" and "constructor" as keys; in a valid event they have no place.
  extra: fc
    .dictionary(extraKey, fc.jsonValue({ maxDepth: 2, stringUnit: 'grapheme' }), { maxKeys: 3 })
    .filter((extra) => !/"(__proto__|constructor)"/.test(JSON.stringify(extra))),
});

/**
 * `{"a":{"a":…}}` or `[[…]]`, `depth` levels deep: junk that is cheap to write and expensive to walk.
 * Kept as a description until it is used, so a counterexample prints as one line.
 */
class Deep {
  constructor(
    readonly depth: number,
    readonly array: boolean,
  ) {}
  value(): unknown {
    let value: unknown = 'bottom';
    for (let i = 0; i < this.depth; i++) value = this.array ? [value] : { a: value };
    return value;
  }
  /** JSON.stringify would overflow the stack on it; the text is easy to write directly. */
  json(): string {
    const [open, close] = this.array ? ['[', ']'] : ['{"a":', '}'];
    return `${open.repeat(this.depth)}"bottom"${close.repeat(this.depth)}`;
  }
}
const deepJunk = fc.tuple(fc.integer({ min: 20, max: 20_000 }), fc.boolean()).map(([depth, array]) => new Deep(depth, array));
const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.anything({ maxDepth: 2 }), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.anything({ maxDepth: 2 }), { maxKeys: 3 }),
  deepJunk,
);
const blank = fc.constantFrom('', ' ', '   ', '\t', ' \n ', '\u00a0', '\u2003 ');
const oversized = (min: number) => fc.string({ unit: fc.constantFrom('a', 'Z', '9', 'é', '字', '-'), minLength: min, maxLength: min * 5 });
const withControl = fc
  .tuple(
    solid,
    fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)),
    solid,
  )
  .map(([a, c, b]) => a + c + b);
const withControlDel = fc.tuple(solid, solid).map(([a, b]) => `${a}\u007f${b}`);
const loneSurrogate = fc
  .tuple(
    solid,
    fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
    solid,
  )
  .map(([a, s, b]) => a + s + b);
const badInstitute = fc.oneof(
  fc.tuple(solid, fc.constantFrom('/', '?', '#', ' ', '%', '\\', '@', ':', '+', 'é', '\u0000', '\n', '..//'), solid).map(([a, c, b]) => a + c + b),
  fc.constantFrom('', '.', '..'),
  fc.string({ unit: fc.constantFrom('a', 'b', '1'), minLength: 129, maxLength: 400 }),
);
const field = fc.constantFrom(...FIELDS);

const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  field.map((key): Mutation => ({ kind: 'missing', key })),
  fc.record({ key: fc.constantFrom<string>(...FIELDS, 'instituteId'), value: wrongType }).map((m): Mutation => ({ kind: 'set', ...m, why: 'wrong type' })),
  fc.record({ key: field, value: blank }).map((m): Mutation => ({ kind: 'set', ...m, why: 'blank' })),
  fc.record({ key: field, value: oversized(201) }).map((m): Mutation => ({ kind: 'set', ...m, why: 'over 200 characters' })),
  fc.record({ key: field, value: fc.oneof(withControl, withControlDel) }).map((m): Mutation => ({ kind: 'set', ...m, why: 'control character' })),
  fc.record({ key: field, value: loneSurrogate }).map((m): Mutation => ({ kind: 'set', ...m, why: 'unpaired surrogate' })),
  badInstitute.map((value): Mutation => ({ kind: 'set', key: 'instituteId', value, why: 'not a safe institute id' })),
  fc.record({ key: fc.constantFrom(...RESERVED), value: fc.jsonValue({ maxDepth: 1 }) }).map((m): Mutation => ({ kind: 'extra', ...m, why: 'reserved key' })),
  fc.record({ key: extraKey, value: oversized(8_200) }).map((m): Mutation => ({ kind: 'extra', ...m, why: 'extra over 8 KB' })),
  fc
    .record({ key: extraKey, value: fc.oneof(loneSurrogate, fc.constant('a\u0000b'), fc.constant({ inner: ['ok', 'nul \u0000 inside'] })) })
    .map((m): Mutation => ({ kind: 'extra', ...m, why: 'unstorable text in an extra field' })),
  fc
    .record({
      key: extraKey,
      // Own "__proto__" keys, as JSON.parse makes them (an object literal would set the prototype instead).
      value: fc
        .constantFrom('{"__proto__": {"admin": true}}', '{"list": [{"__proto__": 1}]}', '{"constructor": {"prototype": {"x": 1}}}')
        .map((json) => JSON.parse(json) as unknown),
    })
    .map((m): Mutation => ({ kind: 'extra', ...m, why: 'a prototype-polluting key in an extra field' })),
  fc
    .record({ key: extraKey, value: fc.integer({ min: 5_000, max: 50_000 }).map((d) => new Deep(d, true)) })
    .map((m): Mutation => ({ kind: 'extra', ...m, why: 'extra nested too deeply to serialise' })),
  fc
    .oneof(
      fc.string(),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
      fc.constant(undefined),
      fc.array(fc.anything({ maxDepth: 2 }), { maxLength: 4 }),
      deepJunk.filter((d) => d.array),
    )
    .map((value): Mutation => ({ kind: 'replace', value, why: 'not an object', field: '(event)' })),
  fc
    .dictionary(fc.string(), fc.anything({ maxDepth: 3 }), { maxKeys: 6 })
    .filter((o) => !('batchId' in o))
    .map((value): Mutation => ({ kind: 'replace', value, why: 'junk object', field: undefined })),
);

/** Mostly bad, some good: three malformed events for every valid one. */
const itemArb: fc.Arbitrary<Item> = fc.record({
  base: baseArb,
  mutation: fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: 3, arbitrary: mutationArb }),
});

const { h } = useHarnessWithWorker();
let seq = 0;
/** Every accepted batch: batch id → the class name it must have on the remote. */
const goods = new Map<string, string>();
/** Every batch id a rejected event carried (when it carried one). */
const rejectedIds = new Set<string>();
let badCount = 0;

interface Materialized {
  /** The event as a value (for publishBatches)… */
  input: unknown;
  /** …and as one NDJSON line (`undefined` when JSON has no text for it). */
  line: () => string | undefined;
  batchId: string;
  name: string;
  expect: 'accept' | { field: string | undefined };
}

/** Gives the item a unique batch id and name; says what intake must do with it. */
function materialize(item: Item): Materialized {
  seq += 1;
  const { base, mutation } = item;
  const batchId = `fz-${seq} ${base.tag}`;
  const name = `${base.name} #${seq}`;
  const event: Record<string, unknown> = { ...base.extra, batchId, name, subject: base.subject };
  if (base.institute === 'default') event.instituteId = h.config.classroom.instituteId;
  const result = (input: unknown, field?: string): Materialized => ({
    input,
    line: () => JSON.stringify(input),
    batchId,
    name,
    expect: mutation ? { field } : 'accept',
  });
  if (!mutation) return result(event);
  if (mutation.kind === 'missing') {
    delete event[mutation.key];
    return result(event, mutation.key);
  }
  const { value } = mutation;
  const field = mutation.kind === 'replace' ? mutation.field : mutation.key;
  if (!(value instanceof Deep)) return result(mutation.kind === 'replace' ? value : { ...event, [mutation.key]: value }, field);
  // Too deep for JSON.stringify: the line is written around a placeholder.
  if (mutation.kind === 'replace') return { ...result(value.value(), field), line: () => value.json() };
  const line = () => JSON.stringify({ ...event, [mutation.key]: PLACEHOLDER }).replace(JSON.stringify(PLACEHOLDER), value.json());
  return { ...result({ ...event, [mutation.key]: value.value() }, field), line };
}
const PLACEHOLDER = '\u0001deep junk goes here\u0001';

function checkRejection(problems: FieldProblem[], field: string | undefined, what: string): void {
  expect(problems.length, `${what}: at least one problem`).toBeGreaterThan(0);
  for (const p of problems) {
    expect(typeof p.field === 'string' && p.field.length > 0, `${what}: a field path`).toBe(true);
    expect(typeof p.reason === 'string' && p.reason.trim().length > 0, `${what}: a reason`).toBe(true);
  }
  // One thing broken in a valid event: every problem names exactly that key.
  if (field !== undefined)
    expect(
      problems.map((p) => p.field),
      what,
    ).toEqual(problems.map(() => field));
}

const params = <T extends [unknown]>(numRuns: number): fc.Parameters<T> => {
  const p: fc.Parameters<T> = { numRuns, endOnFailure: !process.env.FC_SHRINK };
  if (process.env.FC_SEED) p.seed = Number(process.env.FC_SEED);
  if (process.env.FC_PATH) p.path = process.env.FC_PATH;
  return p;
};

async function allSynced(ids: string[]): Promise<void> {
  await untilAllSynced(h, ids, 240_000);
  const { byName } = h.sandbox.state({ classes: false });
  for (const id of ids) expect(byName[goods.get(id)!], `classes named after ${JSON.stringify(id)}`).toBe(1);
}

describe('event intake under fuzzing', () => {
  it('publishBatches: each malformed event rejected with field and reason; the valid ones beside it accepted', { timeout: 300_000 }, async () => {
    const accepted: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.array(itemArb, { minLength: 30, maxLength: 80 }), async (items) => {
        const cases = items.map(materialize);
        const outcomes: PublishOutcome[] = await publishBatches(
          publishDepsOf(h),
          cases.map((c) => c.input),
        );
        expect(outcomes).toHaveLength(cases.length);
        cases.forEach((c, i) => {
          const outcome = outcomes[i]!;
          if (c.expect === 'accept') {
            expect(outcome, `valid event ${i} accepted`).toMatchObject({ ok: true, duplicate: false, state: 'pending' });
            goods.set(c.batchId, c.name);
            accepted.push(c.batchId);
            return;
          }
          badCount += 1;
          rejectedIds.add(c.batchId);
          expect(outcome.ok, `malformed event ${i} rejected`).toBe(false);
          if (!outcome.ok) checkRejection(outcome.problems, c.expect.field, `event ${i}`);
        });
      }),
      params(depth(15, 40)),
    );
    await allSynced(accepted);
  });

  it('NDJSON: bad lines (malformed events, non-JSON) reported with line number, field and reason', { timeout: 300_000 }, async () => {
    const notJson = fc.oneof(
      fc.constantFrom('{"batchId": "x",', 'nul', "{'single': 'quotes'}", '{"a":1}}', '[1,2', 'undefined', '<html>'),
      fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/[\r\n]/.test(s) && s.trim() !== '' && !parses(s)),
    );
    const lineArb = fc.oneof(
      { weight: 6, arbitrary: itemArb.map((item) => ({ item })) },
      { weight: 1, arbitrary: notJson.map((raw) => ({ raw })) },
      { weight: 1, arbitrary: fc.constantFrom('', '   ').map((blankLine) => ({ blankLine })) },
    );
    const accepted: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.array(lineArb, { minLength: 20, maxLength: 100 }), async (lines) => {
        const expected = new Map<number, string | undefined>();
        let goodLines = 0;
        const text = lines.map((line, i) => {
          if ('raw' in line) {
            expected.set(i + 1, '(line)');
            return line.raw;
          }
          if ('blankLine' in line) return line.blankLine;
          const c = materialize(line.item);
          const json = c.line() ?? 'undefined';
          if (c.expect === 'accept') {
            goodLines += 1;
            goods.set(c.batchId, c.name);
            accepted.push(c.batchId);
          } else {
            badCount += 1;
            rejectedIds.add(c.batchId);
            expected.set(i + 1, json === 'undefined' ? '(line)' : c.expect.field);
          }
          return json;
        });
        // Every line ends with a newline, so a blank last line is still a line.
        const report = await enqueueNdjson(publishDepsOf(h), Readable.from([text.map((l) => `${l}\n`).join('')]));
        expect(report.lines, 'lines read').toBe(lines.length);
        expect(report.accepted, 'lines accepted').toBe(goodLines);
        expect(report.duplicates, 'duplicates').toBe(0);
        expect(
          report.rejected.map((r) => r.line),
          'rejected line numbers',
        ).toEqual([...expected.keys()]);
        for (const { line, problems } of report.rejected) {
          const field = expected.get(line);
          checkRejection(problems, field, `line ${line}`);
          if (field === '(line)') expect(problems[0]!.reason).toMatch(/not valid JSON/);
        }
      }),
      params(depth(5, 12)),
    );
    await allSynced(accepted);
  });

  it('nothing rejected reached batch_classes; every class on the remote belongs to an accepted batch', async () => {
    expect(badCount, 'malformed events tried').toBeGreaterThanOrEqual(depth(400, 1_000));
    const rows = await h.runtime.database.db.select({ batchId: batchClasses.batchId, className: batchClasses.className }).from(batchClasses);
    expect(rows).toHaveLength(goods.size);
    for (const row of rows) {
      expect(goods.get(row.batchId), `row ${JSON.stringify(row.batchId)} is an accepted batch`).toBe(row.className);
      expect(rejectedIds.has(row.batchId)).toBe(false);
    }
    expect(h.sandbox.state({ classes: false }).classCount).toBe(goods.size);
  });
});

function parses(s: string): boolean {
  try {
    JSON.parse(s);
    return true;
  } catch {
    return false;
  }
}
