import { describe, expect, it } from 'vitest';
import { INSTITUTE, addClass, call, creds, listing, start, useSandbox } from '../helpers/sandbox.ts';

const sb = useSandbox();

describe('sandbox: the three-call flow', () => {
  it('add → edit → get full gives a join link, "" before enabling', async () => {
    const added = await addClass(sb, 'Physics 9B');
    expect(added.status).toBe(200);
    expect(added.json).toMatchObject({ status: 200, message: 'Success', data: { name: 'Physics 9B', subject: 'Maths' } });
    const id: string = added.json.data._id;
    expect(id).toMatch(/^[0-9a-f]{24}$/);

    const before = await call(sb, 'GET', `/user/v2/classes/${id}?full=true`);
    expect(before.json.data.joinMagicLink).toBe('');

    const edited = await call(sb, 'POST', '/teacher/editClass', { body: { classId: id, enableJoinMagicLink: true } });
    expect(edited.json).toMatchObject({ status: 200, data: { _id: id } });

    const full = await call(sb, 'GET', `/user/v2/classes/${id}?full=true`);
    const data = full.json.data;
    expect(data.joinMagicLink).toMatch(new RegExp(`^${sb.url}/classroom/join/${id}[0-9a-f]{8}$`));
    expect(data.settings.magicJoinTokenConfig.token).toBe(data.joinMagicLink.split('/').pop());
    for (const key of [
      'namespace',
      'pendingRequest',
      'joinedRequest',
      'coTeacherRequests',
      'coTeachers',
      'archived',
      'disableReminder',
      'zoomLink',
      'settings',
      'subject',
      'timing',
      'userId',
      'name',
      'classNumber',
      'timingVersion',
      'schedule',
      'thumbnail',
      'suspendedStudents',
      'createdAt',
    ]) {
      expect(data, key).toHaveProperty(key);
    }
    expect(Object.keys(data.zoomLink).sort()).toEqual(['join_url', 'mettingEnded', 'mettingId', 'startTime']);
    expect((await fetch(data.joinMagicLink)).status).toBe(200);

    // Enabling twice keeps the link; disabling clears it.
    await call(sb, 'POST', '/teacher/editClass', { body: { classId: id, enableJoinMagicLink: true } });
    expect((await call(sb, 'GET', `/user/v2/classes/${id}?full=true`)).json.data.joinMagicLink).toBe(data.joinMagicLink);
    await call(sb, 'POST', '/teacher/editClass', { body: { classId: id, enableJoinMagicLink: false } });
    expect((await call(sb, 'GET', `/user/v2/classes/${id}?full=true`)).json.data.joinMagicLink).toBe('');
  });

  it('get without full=true has no joinMagicLink; unknown ids are 404', async () => {
    const id = (await addClass(sb)).json.data._id;
    const short = await call(sb, 'GET', `/user/v2/classes/${id}`);
    expect(short.json.data._id).toBe(id);
    expect(short.json.data).not.toHaveProperty('joinMagicLink');
    expect((await call(sb, 'GET', '/user/v2/classes/ffffffffffffffffffffffff?full=true')).json).toMatchObject({ status: 404 });
    const edit = await call(sb, 'POST', '/teacher/editClass', { body: { classId: 'nope', enableJoinMagicLink: true } });
    expect(edit.status).toBe(404);
  });

  it('rejects invalid add-class bodies naming the field', async () => {
    const cases: Array<[unknown, string]> = [
      [{ subject: 'x', instituteId: INSTITUTE }, 'name: required'],
      [{ name: 'n', instituteId: INSTITUTE }, 'subject: required'],
      [{ name: 'x'.repeat(201), subject: 's', instituteId: INSTITUTE }, 'name: must be at most 200 characters'],
      [{ name: 'n', subject: 's', instituteId: INSTITUTE, classType: 'BIG' }, 'classType:'],
      [[1, 2], 'body: must be a JSON object'],
    ];
    for (const [body, message] of cases) {
      const res = await call(sb, 'POST', '/addClass', { body });
      expect(res.status, message).toBe(400);
      expect(res.json.status).toBe(400);
      expect(res.json.message).toContain(message);
    }
    const unknown = await call(sb, 'POST', '/addClass', { body: { name: 'n', subject: 's', instituteId: 'other' } });
    expect(unknown.status).toBe(403);
    expect(unknown.json.message).toContain('instituteId');
    expect(sb.store.size).toBe(0);
  });
});

describe('sandbox: credentials and headers', () => {
  const basic = (user: string, key: string) => `Basic ${Buffer.from(`${user}:${key}`).toString('base64')}`;
  const cases: Array<[string, Record<string, string | null>, number, RegExp]> = [
    ['no Authorization', { authorization: null }, 401, /Authorization/],
    ['malformed Authorization', { authorization: 'Bearer abc' }, 401, /Authorization/],
    ['wrong key', { authorization: basic(creds.userId, 'x'.repeat(32)) }, 401, /credentials/],
    ['wrong user', { authorization: basic('someone', creds.apiKey) }, 401, /credentials/],
    ['no x-api-key', { 'x-api-key': null }, 403, /x-api-key/],
    ['wrong x-api-key', { 'x-api-key': 'nope' }, 403, /x-api-key/],
    ['wrong user-agent', { 'user-agent': 'curl/8' }, 403, /user-agent/],
    ['wrong namespace', { 'x-service-namespace': 'other' }, 403, /x-service-namespace/],
    ['live namespace header', { 'x-service-namespace': null, 'x-wise-namespace': creds.namespace }, 403, /x-wise-namespace instead/],
  ];
  it.each(cases)('%s → %i', async (_name, headers, status, message) => {
    const res = await call(sb, 'GET', `/institutes/${INSTITUTE}/classes`, { headers });
    expect(res.status).toBe(status);
    expect(res.json).toMatchObject({ status });
    expect(res.json.message).toMatch(message);
  });

  it('honours the live variants: namespace header, add path, PUT edit', async () => {
    const live = await start({
      credentials: { ...creds, namespaceHeader: 'x-wise-namespace' },
      addClassPath: '/teacher/addClass',
      editClassMethod: 'PUT',
    });
    try {
      const headers = { 'x-service-namespace': null, 'x-wise-namespace': creds.namespace };
      const body = { name: 'n', subject: 's', instituteId: INSTITUTE };
      expect((await call(live, 'POST', '/addClass', { headers, body })).status).toBe(404);
      const added = await call(live, 'POST', '/teacher/addClass', { headers, body });
      expect(added.status).toBe(200);
      const edit = { classId: added.json.data._id, enableJoinMagicLink: true };
      expect((await call(live, 'POST', '/teacher/editClass', { headers, body: edit })).status).toBe(404);
      expect((await call(live, 'PUT', '/teacher/editClass', { headers, body: edit })).status).toBe(200);
      const spec = await call(live, 'GET', `/institutes/${INSTITUTE}/classes`);
      expect(spec.json.message).toMatch(/x-wise-namespace header missing; the request sent x-service-namespace/);
    } finally {
      await live.close();
    }
  });
});

describe('sandbox: institute listing', () => {
  it('lists classes, hidden classes, pending classes; filters by searchTerm and classType', async () => {
    const a = (await addClass(sb, 'Algebra 1')).json.data._id;
    const b = (await addClass(sb, 'Biology')).json.data._id;
    await call(sb, 'POST', '/addClass', { body: { name: 'Algebra Recorded', subject: 's', instituteId: INSTITUTE, classType: 'RECORDED' } });
    sb.store.hide(b);
    sb.store.create({ name: 'Pending one', subject: 's', instituteId: INSTITUTE, pending: true });

    const all = (await listing(sb)).json.data;
    expect(all.classes.map((c: any) => c.name)).toEqual(['Algebra 1', 'Algebra Recorded']);
    expect(all.hiddenClasses.map((c: any) => c._id)).toEqual([b]);
    expect(all.pendingClasses.map((c: any) => c.name)).toEqual(['Pending one']);
    expect(Object.keys(all.classes[0]).sort()).toEqual(['_id', 'classNumber', 'coTeachers', 'joinedRequest', 'name', 'pendingRequest', 'subject', 'thumbnail']);

    const search = (await listing(sb, '?searchTerm=ALGEBRA')).json.data;
    expect(search.classes.map((c: any) => c._id)).toContain(a);
    expect(search.classes).toHaveLength(2);
    expect(search.hiddenClasses).toHaveLength(0);
    expect((await listing(sb, '?classType=RECORDED')).json.data.classes.map((c: any) => c.name)).toEqual(['Algebra Recorded']);
    expect((await listing(sb, '?showCoTeachers=false')).json.data.classes[0]).not.toHaveProperty('coTeachers');
  });

  it('404s an unknown institute', async () => {
    expect((await call(sb, 'GET', '/institutes/someone-else/classes')).json).toMatchObject({ status: 404 });
  });

  it('lists 100,000 classes in one response', async () => {
    for (let i = 0; i < 100_000; i++) sb.store.create({ name: `Batch ${i}`, subject: 's', instituteId: INSTITUTE });
    // Speed is measured by the benchmark, not asserted here (timings flake on a busy machine).
    const res = await listing(sb);
    expect(res.json.data.classes).toHaveLength(100_000);
    expect(res.json.data.classes[99_999].name).toBe('Batch 99999');
  });
});
