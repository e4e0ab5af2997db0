import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerSandboxCommand } from '../../src/cli/sandbox.ts';
import { INSTITUTE, addClass, call, config, control, eventually, listing, useSandbox } from '../helpers/sandbox.ts';

const sb = useSandbox();

describe('sandbox control endpoint', () => {
  it('state: classes, counts by name, calls per operation and outcome', async () => {
    await addClass(sb, 'Twice');
    await addClass(sb, 'Twice');
    sb.faults.enqueue({ operation: 'listClasses', fault: 'error5xx' });
    await listing(sb);
    await call(sb, 'GET', `/institutes/${INSTITUTE}/classes`, { headers: { 'x-api-key': 'bad' } });
    const { json } = await control(sb, 'GET', '/state');
    expect(json.data.classes).toHaveLength(2);
    expect(json.data.classes[0]).toMatchObject({ name: 'Twice', instituteId: INSTITUTE, archived: false, joinMagicLink: '' });
    expect(json.data.byName).toEqual({ Twice: 2 });
    expect(json.data.seed).toBe(42);
    expect(json.data.calls.byOperation).toMatchObject({
      addClass: { calls: 2, outcomes: { ok: 2 } },
      listClasses: { calls: 2, outcomes: { error5xx: 1, http403: 1 } },
    });
    expect(json.data.calls.faultsInjected).toEqual({ error5xx: 1 });
    expect((await control(sb, 'GET', '/state?classes=false')).json.data.classes).toBeUndefined();
  });

  it('faults: PUT replaces, POST /next queues, DELETE clears; bad configs are 400', async () => {
    expect((await control(sb, 'PUT', '/faults', { listingIncludesIds: false, rates: { error5xx: 0 } })).status).toBe(200);
    expect(sb.faults.config.listingIncludesIds).toBe(false);
    const bad = await control(sb, 'PUT', '/faults', { rates: { error5xx: 0.7, hang: 0.6 } });
    expect(bad.status).toBe(400);
    expect(bad.json.message).toMatch(/add up to at most 1/);
    expect((await control(sb, 'PUT', '/faults', { nonsense: 1 })).status).toBe(400);

    const next = await control(sb, 'POST', '/faults/next', [
      { operation: 'addClass', fault: 'lostResponse', count: 2 },
      { operation: '*', fault: 'hang' },
    ]);
    expect(next.json.data.queued).toHaveLength(2);
    await expect(addClass(sb)).rejects.toThrow();
    expect((await control(sb, 'DELETE', '/faults')).status).toBe(200);
    expect(sb.faults.queued()).toEqual([]);
    expect((await addClass(sb)).status).toBe(200);
  });

  it('reset clears classes and counters, and may reseed', async () => {
    await addClass(sb);
    const reset = await control(sb, 'POST', '/reset', { seed: 9 });
    expect(reset.json.data.seed).toBe(9);
    const { json } = await control(sb, 'GET', '/state');
    expect(json.data).toMatchObject({ classCount: 0, byName: {}, calls: { totalCalls: 0 } });
  });

  it('hand-made drift: create, hide, blank the link, delete', async () => {
    const made = await control(sb, 'POST', '/classes', { name: 'Orphan', subject: 'Art', instituteId: INSTITUTE, archived: false });
    const id: string = made.json.data.id;
    expect(made.json.data).toMatchObject({ name: 'Orphan', archived: false });
    expect((await listing(sb)).json.data.classes.map((c: any) => c._id)).toEqual([id]);

    await control(sb, 'POST', `/classes/${id}/hide`);
    expect((await listing(sb)).json.data.hiddenClasses.map((c: any) => c._id)).toEqual([id]);

    await call(sb, 'POST', '/teacher/editClass', { body: { classId: id, enableJoinMagicLink: true } });
    expect(sb.store.get(id)?.joinMagicLink).not.toBe('');
    await control(sb, 'POST', `/classes/${id}/blank-link`);
    expect((await call(sb, 'GET', `/user/v2/classes/${id}?full=true`)).json.data.joinMagicLink).toBe('');

    expect((await control(sb, 'DELETE', `/classes/${id}`)).status).toBe(200);
    expect((await control(sb, 'DELETE', `/classes/${id}`)).status).toBe(404);
    expect((await call(sb, 'GET', `/user/v2/classes/${id}`)).status).toBe(404);

    const bulk = await control(sb, 'POST', '/classes', { name: 'Same', count: 3 });
    expect(bulk.json.data.ids).toHaveLength(3);
    expect(sb.state().byName).toEqual({ Same: 3 });
    expect((await control(sb, 'POST', '/classes', { subject: 'x' })).json.message).toBe('name: required');
  });
});

describe('sandbox command', () => {
  it('prints its URL, serves, and closes when told to stop', async () => {
    const lines: string[] = [];
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const program = new Command().exitOverride();
    registerSandboxCommand(program, () => config, { print: (line) => lines.push(line), untilStopped: () => stopped });
    const running = program.parseAsync(['sandbox', '--port', '0', '--seed', '5', '--listing-delay', '1s', '--no-listing-ids'], { from: 'user' });

    const line = await eventually(() => {
      expect(lines).toHaveLength(1);
      return lines[0] ?? '';
    });
    const url = /(http:\/\/\S+?) /.exec(line)?.[1];
    const state = (await (await fetch(`${url}/__sandbox/state`)).json()) as { data: unknown };
    expect(state.data).toMatchObject({ seed: 5, faults: { config: { listingDelayMs: 1000, listingIncludesIds: false } } });
    stop();
    await running;
    await expect(fetch(`${url}/__sandbox/state`)).rejects.toThrow();
  });
});
