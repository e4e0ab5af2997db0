// Edit-class beyond the join link, as a hosted service takes it: rename, re-subject, archive and
// unarchive, extra fields; refused fields and values change nothing. Real HTTP against the sandbox.
import { describe, expect, it } from 'vitest';
import { createClassroomClient } from '../../src/classroom/client.ts';
import { INSTITUTE, addClass, call, config, creds, listing, useSandbox } from '../helpers/sandbox.ts';

const OTHER_INSTITUTE = 'inst-edit-other';
const sb = useSandbox({
  accounts: [{ name: 'other', credentials: { ...creds, userId: 'other-user', apiKey: 'O'.repeat(32) }, instituteIds: [OTHER_INSTITUTE] }],
});

const edit = (body: Record<string, unknown>) => call(sb, 'POST', '/teacher/editClass', { body });
const full = async (id: string) => (await call(sb, 'GET', `/user/v2/classes/${id}?full=true`)).json.data;
const names = async (list: 'classes' | 'hiddenClasses') => (await listing(sb)).json.data[list].map((c: any) => c.name as string);
const added = async (name = 'Algebra 1'): Promise<string> => (await addClass(sb, name)).json.data._id;
/** Everything a request could have changed of the class: the stored record and what reads show. */
const snapshot = async (id: string) => ({ stored: structuredClone(sb.store.get(id)), full: await full(id), listing: (await listing(sb)).json.data });

describe('sandbox edit-class: more than the join link', () => {
  it('renames: get-class full and the listing show the new name', async () => {
    const id = await added('Algebra 1');
    const res = await edit({ classId: id, name: 'Algebra 2' });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ _id: id, name: 'Algebra 2', subject: 'Maths' });
    expect(res.json.data).not.toHaveProperty('joinMagicLink'); // still the short record
    expect((await full(id)).name).toBe('Algebra 2');
    expect(await names('classes')).toEqual(['Algebra 2']);
  });

  it('a rename goes through the nameRewrite fault as add-class does; one that rewrites to nothing is refused', async () => {
    sb.faults.set({ nameRewrite: { normalize: true, case: 'lower', maxLength: 12, ellipsis: true } });
    const id = await added('Physics');
    const res = await edit({ classId: id, name: '  Physics   9B\tadvanced group ' });
    expect(res.json.data.name).toBe('physics 9b…');
    expect((await full(id)).name).toBe('physics 9b…');
    expect(await names('classes')).toEqual(['physics 9b…']);
    expect(sb.state({ classes: true }).classes?.[0]).toMatchObject({ name: 'physics 9b…', sentName: '  Physics   9B\tadvanced group ' });

    const before = await snapshot(id);
    const blank = await edit({ classId: id, name: ' \t\u00a0 ', subject: 'Optics', archived: true, room: 'B12' });
    expect(blank.status).toBe(400);
    expect(blank.json).toEqual({ status: 400, message: 'name: must not be empty' });
    expect(await snapshot(id)).toEqual(before);
  });

  it('archived: true lists the class under hiddenClasses, archived: false brings it back', async () => {
    const id = await added('Chemistry');
    const archived = await edit({ classId: id, archived: true });
    expect(archived.status).toBe(200);
    expect(archived.json.data.archived).toBe(true);
    expect(await names('hiddenClasses')).toEqual(['Chemistry']);
    expect(await names('classes')).toEqual([]);
    expect((await full(id)).archived).toBe(true);

    expect((await edit({ classId: id, archived: false })).json.data.archived).toBe(false);
    expect(await names('classes')).toEqual(['Chemistry']);
    expect(await names('hiddenClasses')).toEqual([]);
  });

  it('stores subject and extra fields (merged over the ones add-class stored), shown in the full record', async () => {
    const res = await call(sb, 'POST', '/addClass', { body: { name: 'Biology', subject: 'Maths', instituteId: INSTITUTE, room: 'A1', term: 'spring' } });
    const id: string = res.json.data._id;
    const edited = await edit({ classId: id, subject: 'Life sciences', room: 'B12', capacity: 30 });
    expect(edited.json.data).toMatchObject({ subject: 'Life sciences', room: 'B12', term: 'spring', capacity: 30 });
    const record = await full(id);
    expect(record).toMatchObject({ name: 'Biology', subject: 'Life sciences', room: 'B12', term: 'spring', capacity: 30 });
    expect(await listing(sb)).toMatchObject({ json: { data: { classes: [{ name: 'Biology', subject: 'Life sciences' }] } } });
  });

  it('applies every change of one request together with the join link', async () => {
    const id = await added('Geometry');
    const res = await edit({ classId: id, name: 'Geometry II', subject: 'Shapes', archived: true, enableJoinMagicLink: true, room: 'C3' });
    expect(res.status).toBe(200);
    const record = await full(id);
    expect(record).toMatchObject({ name: 'Geometry II', subject: 'Shapes', archived: true, room: 'C3' });
    expect(record.joinMagicLink).toMatch(new RegExp(`/classroom/join/${id}[0-9a-f]{8}$`));
    expect(await names('hiddenClasses')).toEqual(['Geometry II']);
  });

  it('refuses a bad archived, an empty name and fields that cannot be edited, naming the field, and applies nothing', async () => {
    const id = await added('History');
    const before = await snapshot(id);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ archived: 'yes' }, 'archived: must be true or false'],
      [{ archived: null }, 'archived: must be true or false'],
      [{ name: '' }, 'name: must not be empty'],
      [{ name: 'x'.repeat(201) }, 'name: must be at most 200 characters'],
      [{ subject: '' }, 'subject: must not be empty'],
      [{ instituteId: INSTITUTE }, 'instituteId: cannot be edited'],
      [{ _id: id }, '_id: cannot be edited'],
      [{ joinMagicLink: 'http://elsewhere/join/x' }, 'joinMagicLink: cannot be edited'],
    ];
    for (const [bad, message] of cases) {
      const res = await edit({ classId: id, name: 'Renamed', subject: 'Other', archived: true, enableJoinMagicLink: true, room: 'Z9', ...bad });
      expect(res.status, message).toBe(400);
      expect(res.json, message).toEqual({ status: 400, message });
      expect(await snapshot(id), message).toEqual(before);
    }
  });

  it('a class of another institute, or one the replica cannot read yet, is answered as before and left unchanged', async () => {
    const other = sb.store.create({ name: 'Theirs', subject: 'Art', instituteId: OTHER_INSTITUTE })._id;
    const theirs = await edit({ classId: other, name: 'Mine now', archived: true, room: 'X' });
    expect(theirs.json).toEqual({ status: 403, message: `classId: class ${other} belongs to an institute this key may not manage` });
    expect(sb.store.get(other)).toMatchObject({ name: 'Theirs', sentName: 'Theirs', archived: false, extra: {} });

    const lagging = sb.store.create({ name: 'Lagging', subject: 'Art', instituteId: INSTITUTE, readLagMs: 600_000 })._id;
    const unseen = await edit({ classId: lagging, name: 'Renamed', archived: true, enableJoinMagicLink: true, room: 'X' });
    expect(unseen.json).toEqual({ status: 404, message: `classId: class ${lagging} not found` });
    expect(sb.store.get(lagging)).toMatchObject({ name: 'Lagging', archived: false, joinMagicLink: '', extra: {} });
  });

  it("the client's editClass renames and archives in one call", async () => {
    const client = createClassroomClient({ ...config.classroom, baseUrl: sb.url });
    const { classId } = await client.addClass({ name: 'Statistics', subject: 'Maths', instituteId: INSTITUTE });
    await client.editClass(classId, { name: 'Statistics (old)', archived: true, extra: { room: 'D4' } });
    expect(sb.stats.snapshot().byOperation.editClass).toEqual({ calls: 1, outcomes: { ok: 1 } });
    const record = await client.getClass(classId);
    expect(record).toMatchObject({ name: 'Statistics (old)', archived: true, subject: 'Maths' });
    expect(await full(classId)).toMatchObject({ room: 'D4' });
    const listed = await client.listClasses(INSTITUTE);
    expect(listed.hiddenClasses.map((c) => c.name)).toEqual(['Statistics (old)']);
    expect(listed.classes).toEqual([]);

    await client.editClass(classId, { archived: false });
    expect((await client.listClasses(INSTITUTE)).classes.map((c) => c.name)).toEqual(['Statistics (old)']);
  });
});
