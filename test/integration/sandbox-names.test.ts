import { describe, expect, it } from 'vitest';
import { INSTITUTE, addClass, call, control, listing, useSandbox } from '../helpers/sandbox.ts';

const sb = useSandbox();

const state = async () => (await control(sb, 'GET', '/state')).json.data;

describe('sandbox name rewriting over HTTP', () => {
  it('add-class answer, get-class and the listing all show the stored name; state keeps the sent one', async () => {
    sb.faults.set({ nameRewrite: { normalize: true, case: 'lower', maxLength: 12, ellipsis: true } });
    const sent = '  Physics   9B\tadvanced group ';
    const added = await addClass(sb, sent);
    expect(added.status).toBe(200);
    expect(added.json.data.name).toBe('physics 9b…');
    const id: string = added.json.data._id;

    expect((await call(sb, 'GET', `/user/v2/classes/${id}`)).json.data.name).toBe('physics 9b…');
    expect((await call(sb, 'GET', `/user/v2/classes/${id}?full=true`)).json.data.name).toBe('physics 9b…');
    const edited = await call(sb, 'POST', '/teacher/editClass', { body: { classId: id, enableJoinMagicLink: true } });
    expect(edited.json.data.name).toBe('physics 9b…');
    expect((await listing(sb)).json.data.classes.map((c: any) => c.name)).toEqual(['physics 9b…']);

    const truth = await state();
    expect(truth.classes[0]).toMatchObject({ id, name: 'physics 9b…', sentName: sent });
    expect(truth.byName).toEqual({ 'physics 9b…': 1 });
    expect(truth.bySentName).toEqual({ [sent]: 1 });
  });

  it('searchTerm matches the stored name, not the sent one', async () => {
    sb.faults.set({ nameRewrite: { maxLength: 7 } });
    await addClass(sb, 'Algebra for beginners');
    const search = async (term: string) => (await listing(sb, `?searchTerm=${encodeURIComponent(term)}`)).json.data.classes.map((c: any) => c.name);
    expect(await search('algebra')).toEqual(['Algebra']);
    expect(await search('beginners')).toEqual([]);
  });

  it('two batches whose names collide once rewritten stay apart in bySentName', async () => {
    sb.faults.set({ nameRewrite: { case: 'upper' } });
    await addClass(sb, 'Course 1');
    await addClass(sb, 'COURSE 1');
    const truth = await state();
    expect(truth.byName).toEqual({ 'COURSE 1': 2 });
    expect(truth.bySentName).toEqual({ 'Course 1': 1, 'COURSE 1': 1 });
  });

  it('hand-made classes keep their name, and sentName equals it', async () => {
    sb.faults.set({ nameRewrite: { case: 'lower' } });
    const made = await fetch(`${sb.url}/__sandbox/classes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Hand Made', instituteId: INSTITUTE }),
    });
    expect(((await made.json()) as any).data).toMatchObject({ name: 'Hand Made', sentName: 'Hand Made' });
    expect((await state()).bySentName).toEqual({ 'Hand Made': 1 });
  });

  it('a name that normalizes to nothing is refused and not stored', async () => {
    sb.faults.set({ nameRewrite: { normalize: true } });
    const res = await addClass(sb, ' \t\u00a0 ');
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ status: 400, message: 'name: must not be empty' });
    expect(sb.store.size).toBe(0);
  });

  it('without a rule, and after DELETE /__sandbox/faults, names are kept byte for byte', async () => {
    const sent = '  Spaced   Name ';
    expect((await addClass(sb, sent)).json.data.name).toBe(sent);
    sb.faults.set({ nameRewrite: { normalize: true } });
    expect((await fetch(`${sb.url}/__sandbox/faults`, { method: 'DELETE' })).status).toBe(200);
    expect((await addClass(sb, sent)).json.data.name).toBe(sent);
    expect((await state()).byName).toEqual({ [sent]: 2 });
  });
});
