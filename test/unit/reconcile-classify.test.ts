// The classification rules, on hand-made listings and mappings (no I/O).
import { describe, expect, it } from 'vitest';
import type { InstituteListing, ListItem } from '../../src/classroom/schemas.ts';
import { type Classification, classify } from '../../src/reconcile/classify.ts';
import { pickForLinkCheck } from '../../src/reconcile/links.ts';
import type { Mapping } from '../../src/reconcile/mappings.ts';
import { CATEGORIES, type Category, REPAIRED, repairActions } from '../../src/reconcile/types.ts';

const INSTITUTE = 'inst-1';
let nextId = 1;

function mapping(over: Partial<Mapping> & { batchId: string }): Mapping {
  return {
    id: nextId++,
    className: over.batchId,
    classId: null,
    hasLink: true,
    state: 'synced',
    stale: false,
    recent: false,
    revision: 0,
    changePending: false,
    ...over,
  };
}

function listing(parts: Partial<Record<keyof InstituteListing, ListItem[]>>): InstituteListing {
  return { classes: parts.classes ?? [], pendingClasses: parts.pendingClasses ?? [], hiddenClasses: parts.hiddenClasses ?? [] };
}

function run(mappings: Mapping[], list: InstituteListing, noLiveJob: number[] = []): Classification {
  return classify({ instituteId: INSTITUTE, mappings, listing: list, noLiveJob: new Set(noLiveJob) });
}

function classifyWith(mappings: Mapping[], list: InstituteListing, rules: { minCut: number }): Classification {
  return classify({ instituteId: INSTITUTE, mappings, listing: list, noLiveJob: new Set(), rules });
}

function counts(c: Classification): Partial<Record<Category, number>> {
  const out: Partial<Record<Category, number>> = {};
  for (const category of CATEGORIES) {
    const n = category === 'in_sync' ? c.inSync.length : c.findings[category].length;
    if (n > 0) out[category] = n;
  }
  return out;
}

describe('classify', () => {
  it('batches that share a class name but each have their own class are in sync, not duplicates', () => {
    const c = run(
      [mapping({ batchId: 'a', className: 'Algebra', classId: 'c1' }), mapping({ batchId: 'b', className: 'Algebra', classId: 'c2' })],
      listing({
        classes: [
          { _id: 'c1', name: 'Algebra' },
          { _id: 'c2', name: 'Algebra' },
        ],
      }),
    );
    expect(counts(c)).toEqual({ in_sync: 2 });
  });

  it('a second unmapped class with the batch name is a duplicate suspect (listing both), not also an orphan', () => {
    const c = run(
      [mapping({ batchId: 'a', className: 'Algebra', classId: 'c1' })],
      listing({
        classes: [
          { _id: 'c1', name: 'Algebra' },
          { _id: 'c9', name: ' Algebra ' },
        ],
      }),
    );
    expect(counts(c)).toEqual({ duplicate_suspect: 1 });
    expect(c.findings.duplicate_suspect[0]).toMatchObject({ batchId: 'a', candidates: ['c1', 'c9'] });
  });

  it('places each mapped batch in one category, in a fixed order of precedence', () => {
    const stuck = mapping({ batchId: 'stuck', classId: 'x5', state: 'link_enabled', stale: true });
    const hiddenStale = mapping({ batchId: 'hidden-no-link', classId: 'x2', hasLink: false, state: 'created', stale: true });
    const c = run(
      [
        mapping({ batchId: 'gone', classId: 'x0' }),
        mapping({ batchId: 'new', classId: 'x1', recent: true }),
        hiddenStale,
        mapping({ batchId: 'pending-list', classId: 'x3' }),
        mapping({ batchId: 'no-link', classId: 'x4', hasLink: false }),
        stuck,
        mapping({ batchId: 'failed-with-class', classId: 'x7', state: 'failed' }),
      ],
      listing({
        classes: [
          { _id: 'x4', name: 'no-link' },
          { _id: 'x5', name: 'stuck' },
          { _id: 'x7', name: 'failed-with-class' },
        ],
        pendingClasses: [{ _id: 'x3', name: 'pending-list' }],
        hiddenClasses: [{ _id: 'x2', name: 'hidden-no-link' }],
      }),
      [stuck.id, hiddenStale.id],
    );
    expect(c.findings.missing_remote.map((f) => f.batchId)).toEqual(['gone']);
    expect(c.unclassified.tooRecent).toBe(1);
    expect(c.findings.hidden_remote.map((f) => f.batchId)).toEqual(['hidden-no-link']);
    expect(c.findings.link_missing.map((f) => f.batchId)).toEqual(['no-link']);
    expect(c.findings.stuck.map((f) => f.batchId)).toEqual(['stuck']);
    expect(c.inSync.map((e) => e.m.batchId)).toEqual(['pending-list', 'failed-with-class']);
    expect(counts(c)).toEqual({ in_sync: 2, missing_remote: 1, hidden_remote: 1, link_missing: 1, stuck: 1 });
  });

  it('a stale batch that still has a live job is not stuck', () => {
    const m = mapping({ batchId: 'busy', classId: 'c1', state: 'created', stale: true });
    expect(counts(run([m], listing({ classes: [{ _id: 'c1', name: 'busy' }] }), []))).toEqual({ in_sync: 1 });
    expect(counts(run([m], listing({ classes: [{ _id: 'c1', name: 'busy' }] }), [m.id]))).toEqual({ stuck: 1 });
  });

  it('lists classes nobody maps as orphans', () => {
    const c = run([mapping({ batchId: 'a', classId: 'c1' })], listing({ classes: [{ _id: 'c1', name: 'a' }], hiddenClasses: [{ _id: 'zz', name: 'Old' }] }));
    expect(c.findings.orphan_remote).toMatchObject([{ batchId: null, classId: 'zz', list: 'hiddenClasses' }]);
  });
});

describe('classify: batches without a class id', () => {
  it('adopts the single safe candidate of a needs_review batch, and that class is not an orphan', () => {
    const c = run([mapping({ batchId: 'r', className: 'Maybe', state: 'needs_review' })], listing({ classes: [{ _id: 'k1', name: 'Maybe' }] }));
    expect(counts(c)).toEqual({ needs_review_resolved: 1 });
    expect(c.findings.needs_review_resolved[0]).toMatchObject({ batchId: 'r', classId: 'k1' });
  });

  it('does not adopt a candidate whose id is unsafe or missing, or one two batches want', () => {
    const unsafe = run([mapping({ batchId: 'r', className: 'Maybe', state: 'needs_review' })], listing({ classes: [{ _id: 'a/b', name: 'Maybe' }] }));
    expect(counts(unsafe)).toEqual({});
    expect(unsafe.unresolved[0]?.detail).toMatch(/not a safe identifier/);
    const idless = run([mapping({ batchId: 'r', className: 'Maybe', state: 'needs_review' })], listing({ classes: [{ name: 'Maybe' }] }));
    expect(idless.unresolved[0]?.detail).toMatch(/no _id to adopt/);
    const shared = run(
      [mapping({ batchId: 'r1', className: 'Maybe', state: 'needs_review' }), mapping({ batchId: 'r2', className: 'Maybe', state: 'needs_review' })],
      listing({ classes: [{ _id: 'k1', name: 'Maybe' }] }),
    );
    expect(counts(shared)).toEqual({});
    expect(shared.unclassified.unresolvedReview).toBe(2);
  });

  it('a needs_review batch with two candidates is a duplicate suspect; with none it stays the operator’s', () => {
    const two = run(
      [mapping({ batchId: 'r', className: 'Twice', state: 'needs_review' })],
      listing({
        classes: [
          { _id: 'k1', name: 'Twice' },
          { _id: 'k2', name: 'Twice' },
        ],
      }),
    );
    expect(counts(two)).toEqual({ duplicate_suspect: 1 });
    const none = run([mapping({ batchId: 'r', className: 'Nothing', state: 'needs_review' })], listing({}));
    expect(counts(none)).toEqual({});
    expect(none.unresolved[0]?.detail).toMatch(/retry/);
  });

  it('a creating batch’s single candidate is left for its own sync run (not an orphan); pending/failed are not drift', () => {
    const c = run(
      [
        mapping({ batchId: 'c', className: 'Made', state: 'creating' }),
        mapping({ batchId: 'p', className: 'Fresh', state: 'pending' }),
        mapping({ batchId: 'f', className: 'Broken', state: 'failed' }),
      ],
      listing({ classes: [{ _id: 'k1', name: 'Made' }] }),
    );
    expect(counts(c)).toEqual({});
    expect(c.unclassified).toMatchObject({ inFlight: 2, failedWithoutClass: 1 });
  });

  it('a stale pending batch with no job is stuck, unless same-named classes make re-running it unsafe', () => {
    const m = mapping({ batchId: 'p', className: 'Fresh', state: 'pending', stale: true });
    expect(counts(run([m], listing({}), [m.id]))).toEqual({ stuck: 1 });
    expect(
      counts(
        run(
          [m],
          listing({
            classes: [
              { _id: 'k1', name: 'Fresh' },
              { _id: 'k2', name: 'Fresh' },
            ],
          }),
          [m.id],
        ),
      ),
    ).toEqual({ duplicate_suspect: 1 });
  });
});

describe('classify: listings without _id', () => {
  it('matches mapped classes by name, one listed item per mapping, and says so', () => {
    const c = run(
      [
        mapping({ batchId: 'a', className: 'Same', classId: 'c1' }),
        mapping({ batchId: 'b', className: 'Same', classId: 'c2' }),
        mapping({ batchId: 'h', className: 'Hid', classId: 'c3' }),
      ],
      listing({ classes: [{ name: 'Same' }, { name: 'Extra' }], hiddenClasses: [{ name: 'Hid' }] }),
    );
    expect(c.itemsWithoutId).toBe(3);
    expect(c.inSync).toMatchObject([{ m: { batchId: 'a' }, byName: true }]);
    expect(c.findings.missing_remote.map((f) => f.batchId)).toEqual(['b']);
    expect(c.findings.hidden_remote).toMatchObject([{ batchId: 'h', matchedBy: 'name' }]);
    expect(c.findings.orphan_remote).toMatchObject([{ classId: null, className: 'Extra' }]);
  });

  it('a same-named id-less item beyond the one a batch claimed is a duplicate candidate without id', () => {
    const c = run([mapping({ batchId: 'a', className: 'Same', classId: 'c1' })], listing({ classes: [{ name: 'Same' }, { name: 'Same' }] }));
    expect(c.findings.duplicate_suspect).toMatchObject([{ batchId: 'a', candidates: ['c1', null] }]);
  });
});

describe('classify: name_drift', () => {
  const synced = (over: Partial<Mapping> = {}) => mapping({ batchId: 'b', className: 'Introduction to Algebra', classId: 'c1', revision: 3, ...over });

  it('a synced class listed under another name is name_drift, with the listed name and the revision read', () => {
    const c = run([synced()], listing({ classes: [{ _id: 'c1', name: 'Geometry' }] }));
    expect(counts(c)).toEqual({ name_drift: 1 });
    expect(c.findings.name_drift[0]).toMatchObject({
      batchId: 'b',
      classId: 'c1',
      className: 'Introduction to Algebra',
      listedName: 'Geometry',
      revision: 3,
      list: 'classes',
      matchedBy: 'id',
      detail: expect.stringMatching(/listed as "Geometry"/),
    });
  });

  it('a name the remote only normalised or cut, or the name it kept, is not drift', () => {
    const ours = [' introduction  TO algebra', 'Introduction to Alg…', 'Introduction to Alge'];
    for (const name of ours) expect(counts(run([synced()], listing({ classes: [{ _id: 'c1', name }] }))), name).toEqual({ in_sync: 1 });
    // The name the remote kept (stored from get-class): equal after normalising.
    const kept = synced({ remoteName: 'Intro-Algebra (2026)' });
    for (const name of ['Intro-Algebra (2026)', 'intro-algebra  (2026)']) {
      expect(counts(run([kept], listing({ classes: [{ _id: 'c1', name }] }))), name).toEqual({ in_sync: 1 });
    }
    // A cut of the kept name, or a cut shorter than CLASSROOM_NAME_MIN_CUT, is not ours.
    for (const name of ['Intro-Algebra', 'Introduction'])
      expect(counts(run([kept], listing({ classes: [{ _id: 'c1', name }] }))), name).toEqual({ name_drift: 1 });
  });

  it('uses the sync’s minimum cut', () => {
    const m = synced();
    const list = listing({ classes: [{ _id: 'c1', name: 'Introduction' }] });
    expect(counts(run([m], list))).toEqual({ name_drift: 1 });
    expect(counts(classifyWith([m], list, { minCut: 8 }))).toEqual({ in_sync: 1 });
  });

  it('is not judged while a change is pending, before the batch is synced, on a name-only match, or under pendingClasses', () => {
    const renamed = (id: string) => [{ _id: id, name: 'Geometry' }];
    expect(counts(run([synced({ changePending: true })], listing({ classes: renamed('c1') })))).toEqual({ in_sync: 1 });
    expect(counts(run([synced({ state: 'link_enabled' })], listing({ classes: renamed('c1') })))).toEqual({ in_sync: 1 });
    expect(counts(run([synced()], listing({ pendingClasses: renamed('c1') })))).toEqual({ in_sync: 1 });
    // An id-less listing finds a class by its name: a renamed one is simply not found.
    expect(counts(run([synced()], listing({ classes: [{ name: 'Geometry' }] })))).toEqual({ missing_remote: 1, orphan_remote: 1 });
  });

  it('an archived class listed under another name is name_drift (saying it is archived), ahead of hidden_remote', () => {
    const c = run([synced()], listing({ hiddenClasses: [{ _id: 'c1', name: 'Geometry' }] }));
    expect(counts(c)).toEqual({ name_drift: 1 });
    expect(c.findings.name_drift[0]).toMatchObject({ list: 'hiddenClasses', detail: expect.stringMatching(/also archived/) });
    expect(counts(run([synced()], listing({ hiddenClasses: [{ _id: 'c1', name: 'Introduction to Algebra' }] })))).toEqual({ hidden_remote: 1 });
  });
});

describe('classify: cancelled batches', () => {
  const cancelled = (over: Partial<Mapping> = {}) =>
    mapping({ batchId: 'x', className: 'Dropped', classId: 'c1', state: 'cancelled', hasLink: false, revision: 2, ...over });

  it('a cancelled batch whose class is listed under classes is cancelled_visible, with the revision read', () => {
    const c = run([cancelled()], listing({ classes: [{ _id: 'c1', name: 'Dropped' }] }));
    expect(counts(c)).toEqual({ cancelled_visible: 1 });
    expect(c.findings.cancelled_visible[0]).toMatchObject({ batchId: 'x', classId: 'c1', state: 'cancelled', list: 'classes', revision: 2 });
  });

  it('its archived class is in sync (not hidden_remote), and so is one whose archive is still pending', () => {
    expect(counts(run([cancelled()], listing({ hiddenClasses: [{ _id: 'c1', name: 'Dropped' }] })))).toEqual({ in_sync: 1 });
    expect(counts(run([cancelled({ changePending: true })], listing({ classes: [{ _id: 'c1', name: 'Dropped' }] })))).toEqual({ in_sync: 1 });
    expect(counts(run([cancelled()], listing({ pendingClasses: [{ _id: 'c1', name: 'Dropped' }] })))).toEqual({ in_sync: 1 });
  });

  it('a cancelled class renamed on the remote is not name_drift; one deleted is missing_remote', () => {
    expect(counts(run([cancelled()], listing({ classes: [{ _id: 'c1', name: 'Something else' }] })))).toEqual({ cancelled_visible: 1 });
    expect(counts(run([cancelled()], listing({})))).toEqual({ missing_remote: 1 });
  });

  it('a batch cancelled before it had a class is not drift; a same-named class nobody maps is an orphan', () => {
    const c = run([cancelled({ classId: null })], listing({ classes: [{ _id: 'k1', name: 'Dropped' }] }));
    expect(counts(c)).toEqual({ orphan_remote: 1 });
    expect(c.unclassified).toMatchObject({ cancelledWithoutClass: 1, inFlight: 0 });
  });
});

describe('repairActions', () => {
  it('repairs name_drift only with RECONCILE_REPAIR_NAMES, cancelled_visible only with CLASSROOM_ARCHIVE_ON_CANCEL', () => {
    expect(REPAIRED).toEqual({ stuck: 'requeue', link_missing: 'rerun_link_steps', needs_review_resolved: 'adopt', cancelled_visible: 'request_edit' });
    expect(repairActions({ repairNames: true, archiveOnCancel: false })).toMatchObject({ name_drift: 'request_edit' });
    expect(repairActions({ repairNames: true, archiveOnCancel: false })).not.toHaveProperty('cancelled_visible');
    expect(repairActions({ repairNames: false, archiveOnCancel: false })).not.toHaveProperty('name_drift');
  });
});

describe('pickForLinkCheck', () => {
  it('rotates through synced in-sync batches by row id, continuing after the cursor and wrapping', () => {
    const ms = [1, 2, 3, 4, 5].map((i) => mapping({ batchId: `b${i}`, classId: `c${i}`, id: i * 10 }));
    ms.push(mapping({ batchId: 'busy', classId: 'c6', id: 60, state: 'created' }));
    const c = run(ms, listing({ classes: ms.map((m) => ({ _id: m.classId!, name: m.className })) }));
    const chunks = [{ instituteId: INSTITUTE, entries: c.inSync }];
    expect(pickForLinkCheck(chunks, 2, null).map((f) => f.rowId)).toEqual([10, 20]);
    expect(pickForLinkCheck(chunks, 2, 20).map((f) => f.rowId)).toEqual([30, 40]);
    expect(pickForLinkCheck(chunks, 3, 40).map((f) => f.rowId)).toEqual([50, 10, 20]);
    expect(pickForLinkCheck(chunks, 10, 40).map((f) => f.rowId)).toEqual([50, 10, 20, 30, 40]);
    expect(pickForLinkCheck(chunks, 0, null)).toEqual([]);
  });
});
