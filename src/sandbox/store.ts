// The sandbox's ground truth: every class it holds, indexed by id and by institute.
// Sized for 100k+ classes: Maps keep lookups O(1) and listing a single pass in insertion order.
import { deriveSeed, mulberry32, randomHex } from './random.ts';

export const CLASS_TYPES = ['LIVE', 'RECORDED', 'ONE_TO_ONE'] as const;
export type ClassType = (typeof CLASS_TYPES)[number];

export interface StoredClass {
  readonly _id: string;
  readonly instituteId: string;
  /** As stored: add-class and edit-class may have rewritten it (see names.ts). */
  name: string;
  /** As the caller last sent it; ground truth uses it to tell which batch a class belongs to. */
  sentName: string;
  subject: string;
  readonly classType: ClassType;
  readonly classNumber: number;
  /** Epoch milliseconds; the listing delay compares against it. */
  readonly createdAt: number;
  /** Epoch milliseconds from which reads (get, edit, listing) see the class: replica lag. */
  readonly readableFrom: number;
  /** Epoch milliseconds from which get-class shows the current join link (it lags each enabling). */
  linkReadableFrom: number;
  readonly scheduleId: string;
  /** Archived ("hidden") classes are listed under `hiddenClasses`. */
  archived: boolean;
  /** Listed under `pendingClasses` (only hand-made classes can be pending). */
  pending: boolean;
  /** "" while disabled, as the live service does. */
  joinMagicLink: string;
  magicJoinToken: { enabledOn: string; token: string } | undefined;
  /** Fields the caller sent that the sandbox does not model; echoed back in full records. */
  extra: Readonly<Record<string, unknown>>;
}

/** What one edit-class changes; every field left out stays as it is. */
export interface ClassEdit {
  /** The name to keep (rewritten) and the name the caller sent: both or neither. */
  name?: { kept: string; sent: string } | undefined;
  subject?: string | undefined;
  /** true lists the class under `hiddenClasses`, false brings it back. */
  archived?: boolean | undefined;
  /** Merged over the class's extra fields. */
  extra?: Record<string, unknown> | undefined;
  enableJoinMagicLink?: boolean | undefined;
}

export interface NewClass {
  name: string;
  /** The name before the remote rewrote it; defaults to `name` (hand-made classes). */
  sentName?: string | undefined;
  /** Reads see the class this long after it is created (default 0: at once). */
  readLagMs?: number | undefined;
  subject: string;
  instituteId: string;
  classType?: ClassType | undefined;
  archived?: boolean | undefined;
  pending?: boolean | undefined;
  extra?: Record<string, unknown> | undefined;
}

/** What `GET /__sandbox/state` shows of one class. */
export interface ClassTruth {
  id: string;
  name: string;
  sentName: string;
  subject: string;
  instituteId: string;
  classType: ClassType;
  archived: boolean;
  pending: boolean;
  joinMagicLink: string;
  createdAt: string;
  /** The fields the caller sent that the sandbox does not model (add-class, merged by edit-class). */
  extra: Readonly<Record<string, unknown>>;
}

export interface SandboxStore {
  readonly size: number;
  hasInstitute(instituteId: string): boolean;
  create(input: NewClass): StoredClass;
  get(id: string): StoredClass | undefined;
  /**
   * Enables (idempotently: the same link twice) or clears the join link; undefined for an unknown id.
   * `linkLagMs` is asked only when a link is actually (re)created: reads show it that much later.
   */
  setJoinLink(id: string, enabled: boolean, linkLagMs?: () => number): StoredClass | undefined;
  /** Applies every change of one edit-class together; undefined (nothing changed) for an unknown id. `linkLagMs` as for setJoinLink. */
  edit(id: string, changes: ClassEdit, linkLagMs?: () => number): StoredClass | undefined;
  delete(id: string): boolean;
  /** Archives the class, so listings show it under `hiddenClasses`. */
  hide(id: string): boolean;
  /** Sets `joinMagicLink` to "" without touching the token config: the drift a reconciler must notice. */
  blankLink(id: string): boolean;
  classesOf(instituteId: string): IterableIterator<StoredClass> | undefined;
  all(): IterableIterator<StoredClass>;
  countByName(): Record<string, number>;
  countBySentName(): Record<string, number>;
  truth(): ClassTruth[];
  /** Empties the store and replays the id stream from `seed`; the class counter keeps counting so old ids never come back. */
  reset(seed: number): void;
}

export interface StoreDeps {
  instituteIds: readonly string[];
  seed: number;
  clock: () => number;
  /** Base for join links, known only once the server listens. */
  linkBase: () => string;
}

export function createStore(deps: StoreDeps): SandboxStore {
  const byId = new Map<string, StoredClass>();
  const byInstitute = new Map<string, Map<string, StoredClass>>(deps.instituteIds.map((id) => [id, new Map()]));
  let random = mulberry32(deriveSeed(deps.seed, 1));
  let counter = 0;
  let classNumber = 0;

  // ObjectId-like: 14 seeded random hex + a 10-hex counter, so ids are unique and reproducible.
  const nextId = () => randomHex(random, 14) + (++counter).toString(16).padStart(10, '0');

  const store: SandboxStore = {
    get size() {
      return byId.size;
    },
    hasInstitute: (instituteId) => byInstitute.has(instituteId),
    create(input) {
      const institute = byInstitute.get(input.instituteId);
      if (!institute) throw new Error(`unknown institute ${input.instituteId}`);
      const record = newRecord(input, { _id: nextId(), classNumber: ++classNumber, scheduleId: nextId(), createdAt: deps.clock() });
      byId.set(record._id, record);
      institute.set(record._id, record);
      return record;
    },
    get: (id) => byId.get(id),
    setJoinLink: (id, enabled, linkLagMs) => store.edit(id, { enableJoinMagicLink: enabled }, linkLagMs),
    edit(id, changes, linkLagMs) {
      const record = byId.get(id);
      if (!record) return undefined;
      if (changes.name) Object.assign(record, { name: changes.name.kept, sentName: changes.name.sent });
      if (changes.subject !== undefined) record.subject = changes.subject;
      if (changes.archived !== undefined) record.archived = changes.archived;
      if (changes.extra) record.extra = { ...record.extra, ...changes.extra };
      // The live token is the class id plus 8 hex characters.
      const token = () => record._id + randomHex(random, 8);
      if (changes.enableJoinMagicLink !== undefined) applyJoinLink(record, changes.enableJoinMagicLink, deps, token, linkLagMs);
      return record;
    },
    delete(id) {
      const record = byId.get(id);
      if (!record) return false;
      byId.delete(id);
      byInstitute.get(record.instituteId)?.delete(id);
      return true;
    },
    hide: (id) => mutate(byId, id, (r) => (r.archived = true)),
    blankLink: (id) => mutate(byId, id, (r) => (r.joinMagicLink = '')),
    classesOf: (instituteId) => byInstitute.get(instituteId)?.values(),
    all: () => byId.values(),
    countByName: () => countBy(byId.values(), 'name'),
    countBySentName: () => countBy(byId.values(), 'sentName'),
    truth: () => Array.from(byId.values(), toTruth),
    reset(seed) {
      byId.clear();
      for (const institute of byInstitute.values()) institute.clear();
      random = mulberry32(deriveSeed(seed, 1));
    },
  };
  return store;
}

/** A new class as add-class (or a hand-made one) stores it: no join link yet, readable after its lag. */
function newRecord(input: NewClass, made: { _id: string; classNumber: number; scheduleId: string; createdAt: number }): StoredClass {
  return {
    _id: made._id,
    instituteId: input.instituteId,
    name: input.name,
    sentName: input.sentName ?? input.name,
    subject: input.subject,
    classType: input.classType ?? 'LIVE',
    classNumber: made.classNumber,
    createdAt: made.createdAt,
    readableFrom: made.createdAt + (input.readLagMs ?? 0),
    linkReadableFrom: 0,
    scheduleId: made.scheduleId,
    archived: input.archived ?? false,
    pending: input.pending ?? false,
    joinMagicLink: '',
    magicJoinToken: undefined,
    extra: input.extra ?? {},
  };
}

/**
 * Clears the join link, or enables it: an enabled link stays as it is (enabling twice is the same
 * link), and a link blanked by drift comes back with its old token. `newToken` is asked only for a first link.
 */
function applyJoinLink(
  record: StoredClass,
  enabled: boolean,
  deps: Pick<StoreDeps, 'clock' | 'linkBase'>,
  newToken: () => string,
  linkLagMs: (() => number) | undefined,
): void {
  if (!enabled) {
    record.joinMagicLink = '';
    record.magicJoinToken = undefined;
  } else if (!record.magicJoinToken || record.joinMagicLink === '') {
    const token = record.magicJoinToken?.token ?? newToken();
    record.magicJoinToken = { enabledOn: new Date(deps.clock()).toISOString(), token };
    record.joinMagicLink = `${deps.linkBase()}/classroom/join/${token}`;
    record.linkReadableFrom = deps.clock() + (linkLagMs?.() ?? 0);
  }
}

function countBy(records: Iterable<StoredClass>, key: 'name' | 'sentName'): Record<string, number> {
  const counts: Record<string, number> = Object.create(null);
  for (const r of records) counts[r[key]] = (counts[r[key]] ?? 0) + 1;
  return counts;
}

function mutate(byId: Map<string, StoredClass>, id: string, change: (r: StoredClass) => void): boolean {
  const record = byId.get(id);
  if (record) change(record);
  return record !== undefined;
}

export function toTruth(r: StoredClass): ClassTruth {
  return {
    id: r._id,
    name: r.name,
    sentName: r.sentName,
    subject: r.subject,
    instituteId: r.instituteId,
    classType: r.classType,
    archived: r.archived,
    pending: r.pending,
    joinMagicLink: r.joinMagicLink,
    createdAt: new Date(r.createdAt).toISOString(),
    extra: { ...r.extra },
  };
}
