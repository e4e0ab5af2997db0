import { Command } from 'commander';
import { beforeEach, describe, expect, it } from 'vitest';
import { registerSandboxCommand } from '../../src/cli/sandbox.ts';
import { type Config, loadConfig } from '../../src/config/config.ts';
import { writeAccountsFile } from '../helpers/accounts.ts';
import { INSTITUTE, addClass, call, config, control, eventually, listing, useSandbox } from '../helpers/sandbox.ts';

const sb = useSandbox();
let id: string;
beforeEach(async () => {
  id = (await addClass(sb, 'Before the refusal')).json.data._id;
});

/** One call of each remote operation. */
const everyOperation = () => [
  addClass(sb, 'During the refusal'),
  call(sb, 'POST', '/teacher/editClass', { body: { classId: id, enableJoinMagicLink: true } }),
  call(sb, 'GET', `/user/v2/classes/${id}?full=true`),
  listing(sb),
];

describe('sandbox refused key', () => {
  it('every operation answers 401 in the service shape and does nothing; stats count http401', async () => {
    expect((await control(sb, 'PUT', '/faults', { refuseKey: {} })).status).toBe(200);
    for (const res of await Promise.all(everyOperation())) {
      expect(res.status).toBe(401);
      expect(res.json).toEqual({ status: 401, message: 'invalid credentials: this API key has been revoked' });
      expect(res.json.message).not.toContain(id);
      expect(res.json.message).not.toContain(INSTITUTE);
    }
    const { data } = (await control(sb, 'GET', '/state')).json;
    expect(data.classes.map((c: any) => c.name)).toEqual(['Before the refusal']);
    expect(data.classes[0].joinMagicLink).toBe('');
    expect(data.keyRefused).toBe(true);
    for (const op of ['addClass', 'editClass', 'getClass', 'listClasses']) {
      expect(data.calls.byOperation[op].outcomes.http401, op).toBe(1);
    }
    expect(data.calls.faultsInjected).toEqual({});
  });

  it('403 when asked, with its own message', async () => {
    sb.faults.set({ refuseKey: { status: 403 } });
    for (const res of await Promise.all(everyOperation())) {
      expect(res.status).toBe(403);
      expect(res.json).toEqual({ status: 403, message: 'this API key is suspended' });
    }
    expect(sb.state().calls.byOperation.getClass?.outcomes).toEqual({ http403: 1 });
  });

  it('bad credentials are still reported as such: the refusal comes after the header checks', async () => {
    sb.faults.set({ refuseKey: {} });
    const wrong = await call(sb, 'GET', `/user/v2/classes/${id}`, { headers: { 'x-api-key': 'nope' } });
    expect(wrong.json).toEqual({ status: 403, message: 'x-api-key not recognised' });
  });

  it('with forMs the refusal lapses by itself, and calls work again without anyone clearing it', async () => {
    // Short, but long enough that a loaded machine still sees the refusal before it lapses.
    sb.faults.set({ refuseKey: { forMs: 1_000 } });
    expect((await listing(sb)).status).toBe(401);
    expect((await control(sb, 'GET', '/state?classes=false')).json.data.keyRefused).toBe(true);
    await eventually(async () => expect((await control(sb, 'GET', '/state?classes=false')).json.data.keyRefused).toBe(false), 5_000);
    for (const res of await Promise.all(everyOperation())) expect(res.status).toBe(200);
    expect(sb.faults.config.refuseKey).toEqual({ forMs: 1_000 }); // still set, just lapsed
  });

  it('DELETE /__sandbox/faults lifts it at once', async () => {
    sb.faults.set({ refuseKey: {} });
    expect((await listing(sb)).status).toBe(401);
    await control(sb, 'DELETE', '/faults');
    expect((await control(sb, 'GET', '/state?classes=false')).json.data.keyRefused).toBe(false);
    expect((await listing(sb)).status).toBe(200);
  });
});

describe('PUT /__sandbox/faults: the new settings are validated, naming the field', () => {
  it.each([
    [{ nameRewrite: { case: 'title' } }, 'nameRewrite.case: must be one of lower, upper'],
    [{ nameRewrite: { maxLength: 0 } }, 'nameRewrite.maxLength: must be at least 1'],
    [{ nameRewrite: { ellipsis: true } }, 'nameRewrite.ellipsis: needs maxLength'],
    [{ readLagMs: -1 }, 'readLagMs: '],
    [{ readLagMs: 3_600_001 }, 'readLagMs: '],
    [{ readLagMs: 1_000, readLagMinMs: 1_001 }, 'readLagMinMs: must not exceed the read lag it is the floor of (readLagMs: 1000 ms)'],
    [{ readLagMinMs: 500 }, 'readLagMinMs: must not exceed the read lag it is the floor of (readLagMs: not set, so 0)'],
    [{ refuseKey: { status: 500 } }, 'refuseKey.status: must be 401 or 403'],
    [{ refuseKey: { forMs: 0 } }, 'refuseKey.forMs: must be at least 1'],
    [{ refuseKey: true }, 'refuseKey: '],
  ])('%j', async (body, message) => {
    const res = await control(sb, 'PUT', '/faults', body);
    expect(res.status).toBe(400);
    expect(res.json.message.startsWith(message)).toBe(true);
    expect(sb.faults.config).toEqual({}); // the bad config was not applied
  });

  it('accepts all three together and shows them in the state', async () => {
    const body = { nameRewrite: { normalize: true, case: 'upper', maxLength: 30, ellipsis: true }, readLagMs: 500, refuseKey: { status: 403, forMs: 60_000 } };
    expect((await control(sb, 'PUT', '/faults', body)).status).toBe(200);
    expect((await control(sb, 'GET', '/state?classes=false')).json.data).toMatchObject({ faults: { config: body }, keyRefused: true });
  });
});

describe('sandbox command: the new flags', () => {
  const run = (args: string[], withConfig: Config = config) => {
    const lines: string[] = [];
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const program = new Command().exitOverride().configureOutput({ writeErr: () => {} });
    registerSandboxCommand(program, () => withConfig, { print: (line) => lines.push(line), untilStopped: () => stopped });
    const running = program.parseAsync(['sandbox', '--port', '0', ...args], { from: 'user' });
    return { lines, stop, running };
  };

  it('sets names, read lag and a refused key from flags', async () => {
    const { lines, stop, running } = run([
      '--normalize-names',
      '--name-case',
      'lower',
      '--cut-names',
      '20',
      '--cut-ellipsis',
      '--read-lag',
      '2s',
      '--read-lag-min',
      '1s',
      '--refuse-key',
      '--refuse-key-status',
      '403',
      '--refuse-key-for',
      '1m',
    ]);
    const line = await eventually(() => {
      expect(lines).toHaveLength(1);
      return lines[0] ?? '';
    });
    const url = /(http:\/\/\S+?) /.exec(line)?.[1];
    const state = ((await (await fetch(`${url}/__sandbox/state`)).json()) as { data: any }).data;
    expect(state.faults.config).toMatchObject({
      nameRewrite: { normalize: true, case: 'lower', maxLength: 20, ellipsis: true },
      readLagMs: 2_000,
      readLagMinMs: 1_000,
      refuseKey: { status: 403, forMs: 60_000 },
    });
    expect(state.keyRefused).toBe(true);
    stop();
    await running;
  });

  it.each([
    [['--name-case', 'title'], '--name-case'],
    [['--cut-names', '0'], '--cut-names'],
    [['--read-lag', 'soon'], '--read-lag'],
    [['--refuse-key', '--refuse-key-status', '500'], '--refuse-key-status'],
    [['--refuse-key-for', '5s'], '--refuse-key-for'],
  ])('%j is refused naming the flag', async (args, flag) => {
    const { running } = run(args);
    await expect(running).rejects.toThrow(flag);
  });

  it("--refuse-key-account refuses only the named accounts' keys; an unknown name is refused", async () => {
    const file = writeAccountsFile([{ name: 'north' }, { name: 'south' }, { name: 'east' }]);
    try {
      const withAccounts = loadConfig({ CLASSROOM_ACCOUNTS_FILE: file.path });
      const { lines, stop, running } = run(['--refuse-key', '--refuse-key-account', 'south', '--refuse-key-account', 'east'], withAccounts);
      const line = await eventually(() => {
        expect(lines).toHaveLength(1);
        return lines[0] ?? '';
      });
      const url = /(http:\/\/\S+?) /.exec(line)?.[1];
      const state = ((await (await fetch(`${url}/__sandbox/state`)).json()) as { data: any }).data;
      expect(state.faults.config.refuseKey).toEqual({ accounts: ['south', 'east'] });
      const refused = Object.fromEntries(Object.entries(state.accounts as Record<string, { keyRefused: boolean }>).map(([name, a]) => [name, a.keyRefused]));
      expect(refused).toMatchObject({ south: true, east: true });
      expect(state.keyRefused || refused.north).toBe(false);
      stop();
      await running;
      await expect(run(['--refuse-key', '--refuse-key-account', 'west'], withAccounts).running).rejects.toThrow(
        '--refuse-key-account west: no account of that name (accounts: north, south, east',
      );
      await expect(run(['--refuse-key-account', 'south'], withAccounts).running).rejects.toThrow('--refuse-key-account needs --refuse-key');
    } finally {
      file.remove();
    }
  });
});
