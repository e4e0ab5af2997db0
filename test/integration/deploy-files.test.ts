// .env.example, the Dockerfile and docker-compose.yml, checked against the code as a user would run
// them (issue 14, item 5). No Docker engine is needed: the files are parsed, every name in them is
// held to what the code reads and registers, and the healthcheck commands that only need Node are run
// for real against the servers they probe.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, SANDBOX_DEFAULTS, loadConfig } from '../../src/config/config.ts';
import { type HttpServer, createHttpServer } from '../../src/http/server.ts';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { ROOT, killAllChildren, runCli, scratchDir, startCli } from '../helpers/cli.ts';
import { publishDepsOf } from '../helpers/harness.ts';
import { useHarness } from '../helpers/use-harness.ts';
import { httpSettingsOf } from '../../src/http/settings.ts';

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const sorted = (names: Iterable<string>) => [...new Set(names)].sort();

const example = read('.env.example');
/** What `process.loadEnvFile` (and so the CLI) sets from the file as copied. */
const active = parseEnv(example) as Record<string, string>;
/** `#NAME=value` lines: a default or an alternative, shown but not set. */
const documented = [...example.matchAll(/^#([A-Z][A-Z0-9_]*)=(.*)$/gm)].map(([, name, value]) => ({ name: name!, value: value! }));

/** Every `NAME` in the first column of the README's Configuration table. */
function readmeSettings(): string[] {
  const readme = read('README.md');
  const section = readme.slice(readme.indexOf('\n## Configuration'), readme.indexOf('\n## ', readme.indexOf('\n## Configuration') + 1));
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));
  return rows.flatMap((row) => [...row.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
}

interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
}
const compose = parse(read('docker-compose.yml')) as { services: Record<string, ComposeService> };
const service = (name: string) => compose.services[name]!;

/** Compose's `${NAME:-default}` interpolation, with `vars` standing for the shell and `.env`. */
const interpolate = (value: string, vars: Record<string, string>) =>
  value.replace(/\$\{(\w+):-([^}]*)\}/g, (_, name: string, fallback: string) => vars[name] || fallback);

const dockerfile = read('Dockerfile');
/** The JSON-array form of a Dockerfile instruction (CMD, or HEALTHCHECK's CMD), continuation lines joined. */
function execForm(instruction: RegExp): string[] {
  const match = instruction.exec(dockerfile.replace(/\\\n\s*/g, ' '));
  expect(match, `${instruction} in the Dockerfile`).not.toBeNull();
  return JSON.parse(match![1]!) as string[];
}

/** A TCP port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Runs an exec-form healthcheck (`node -e …`) from the repository, as the container would from /app.
 * Asynchronously: the server it probes may live in this very process.
 */
function runHealthcheck(argv: string[], env: Record<string, string> = {}): Promise<number | null> {
  const [command, ...args] = argv;
  expect(command).toBe('node');
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 }, (error) =>
      resolve(error ? (typeof error.code === 'number' ? error.code : null) : 0),
    );
  });
}

/** The help of `node SCRIPT …` (commands, flags) from the repository, as an image's or a compose service's command runs it from /app (npm test builds dist/ first). */
function builtHelp(script: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, ...args, '--help'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '' } }, (error, stdout) =>
      error ? reject(error) : resolve(stdout),
    );
  });
}
const commandsIn = (help: string) => [...help.slice(help.indexOf('Commands:')).matchAll(/^ {2}([a-z][\w-]*)/gm)].map((m) => m[1]!);
const flagsIn = (help: string) => [...help.matchAll(/--[a-z][\w-]*/g)].map((m) => m[0]);

const { h, defer } = useHarness(); // its sandbox accepts exactly the sandbox's default credentials
defer(killAllChildren);

describe('.env.example', () => {
  it("as copied, is a valid configuration for the built-in sandbox, with the spec's paths and methods", () => {
    const config = loadConfig(active);
    expect(config.classroom).toMatchObject({
      baseUrl: SANDBOX_DEFAULTS.CLASSROOM_BASE_URL,
      userId: SANDBOX_DEFAULTS.CLASSROOM_USER_ID,
      apiKey: SANDBOX_DEFAULTS.CLASSROOM_API_KEY,
      xApiKey: SANDBOX_DEFAULTS.CLASSROOM_X_API_KEY,
      instituteId: SANDBOX_DEFAULTS.CLASSROOM_INSTITUTE_ID,
      userAgent: SANDBOX_DEFAULTS.CLASSROOM_USER_AGENT,
      namespace: SANDBOX_DEFAULTS.CLASSROOM_NAMESPACE,
      namespaceHeader: 'x-service-namespace',
      addClassPath: '/addClass',
      editClassMethod: 'POST',
    });
  });

  it("names every setting of the README's table and no other, and each is one loadConfig reads", () => {
    const inExample = sorted([...Object.keys(active), ...documented.map((d) => d.name)]);
    expect(inExample, 'settings in .env.example vs the README table').toEqual(sorted(readmeSettings()));
    expect(inExample, 'settings in .env.example vs what loadConfig reads').toEqual(sorted(CONFIG_VARIABLES));
  });

  it('shows only values that are valid: each #NAME= line, set on its own, still loads', () => {
    expect(documented.length).toBeGreaterThan(20);
    for (const { name, value } of documented) {
      expect(() => loadConfig({ ...active, [name]: value }), `#${name}=${value}`).not.toThrow();
    }
    // The edit method is the spec's (and the sandbox's); PUT is only mentioned for the live service.
    expect(documented.find((d) => d.name === 'CLASSROOM_EDIT_CLASS_METHOD')?.value).toBe('POST');
  });

  it('works as copied: `classroom-sync check` with it as .env passes against the sandbox', async () => {
    const cwd = scratchDir();
    copyFileSync(join(ROOT, '.env.example'), join(cwd, '.env'));
    // Only where things run differs here (the test database, Redis and the sandbox's port); every
    // credential and header comes from the copied file.
    const env = { DATABASE_URL: h.env.DATABASE_URL!, REDIS_URL: h.env.REDIS_URL!, CLASSROOM_BASE_URL: h.sandbox.url };
    const { code, stdout, stderr } = await runCli(['check'], { cwd, env });
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toContain(`settings: environment, plus ${join(cwd, '.env')}`);
    expect(stdout).toContain('all checks passed');
  });

  it("as copied, leaves docker compose's worker pointed at the sandbox service", () => {
    const url = interpolate(service('worker').environment!.CLASSROOM_BASE_URL!, active);
    expect(url).toBe(`http://sandbox:${sandboxPort()}`);
  });
});

describe('Dockerfile', () => {
  it('runs on Node 24 (the LTS line still getting security fixes) in every stage', () => {
    const image = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(dockerfile);
    expect(Number(image?.[1])).toBe(24);
    const stages = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    expect(stages.length).toBeGreaterThan(0);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a placeholder written literally in the file under test
    for (const from of stages) expect(from).toBe('${NODE_IMAGE}');
  });

  it('copies files that exist, and its CMD is a command the CLI has', async () => {
    for (const [, sources] of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)) {
      for (const source of sources!.split(/\s+/)) expect(existsSync(join(ROOT, source)), `COPY ${source}`).toBe(true);
    }
    const cmd = execForm(/^CMD (\[.*\])$/m);
    expect(cmd.slice(0, 2)).toEqual(['node', 'dist/cli/main.js']);
    expect(commandsIn(await builtHelp(cmd[1]!, []))).toContain(cmd[2]);
  });

  it("HEALTHCHECK passes against the worker's HTTP server on PORT, and fails when nothing answers", async () => {
    const healthcheck = execForm(/^HEALTHCHECK .*?CMD (\[.*\])$/m);
    const port = await freePort();
    const server: HttpServer = await createHttpServer({
      ...h.runtime,
      httpSettings: httpSettingsOf(h.config),
      metrics: createMetrics({ defaultMetrics: false }),
      publish: publishDepsOf(h.runtime),
    });
    try {
      await server.listen({ port, host: '127.0.0.1' });
      expect(await runHealthcheck(healthcheck, { PORT: String(port) })).toBe(0);
    } finally {
      await server.close();
    }
    expect(await runHealthcheck(healthcheck, { PORT: String(port) })).toBe(1);
  });
});

const sandboxPort = () => Number(portFlag(service('sandbox').command!));
function portFlag(command: readonly string[]): string {
  return command[command.indexOf('--port') + 1]!;
}

describe('docker-compose.yml', () => {
  it('sets only settings loadConfig reads, valid ones, and points the worker at the compose services', () => {
    const worker = service('worker');
    const env = Object.fromEntries(Object.entries(worker.environment!).map(([k, v]) => [k, interpolate(String(v), {})]));
    for (const name of Object.keys(env)) expect(CONFIG_VARIABLES, `worker environment ${name}`).toContain(name);
    const config = loadConfig(env);
    const db = new URL(config.databaseUrl);
    expect([db.hostname, db.port, db.pathname]).toEqual(['postgres', '5432', `/${service('postgres').environment!.POSTGRES_DB}`]);
    expect(new URL(config.redisUrl).hostname).toBe('redis');
    expect(config.classroom.baseUrl).toBe(`http://sandbox:${sandboxPort()}`);
    // PORT is the port published, the one EXPOSEd, and the one the image's HEALTHCHECK asks.
    expect(worker.ports).toEqual([`127.0.0.1:${config.http.port}:${config.http.port}`]);
    expect(dockerfile).toContain(`EXPOSE ${config.http.port}`);
    // SIGTERM drains for SHUTDOWN_GRACE; Docker must wait longer before it kills.
    expect(Number(/^(\d+)s$/.exec(worker.stop_grace_period ?? '')?.[1]) * 1000).toBeGreaterThan(config.sync.shutdownGraceMs);
  });

  it('runs the sandbox with a command and flags the CLI has', async () => {
    const command = service('sandbox').command!;
    expect(command.slice(0, 3)).toEqual(['node', 'dist/cli/main.js', 'sandbox']);
    const flags = flagsIn(await builtHelp(command[1]!, ['sandbox']));
    for (const arg of command.slice(3).filter((a) => a.startsWith('--'))) expect(flags, `sandbox ${arg}`).toContain(arg);
    expect(service('sandbox').ports).toEqual([`127.0.0.1:${sandboxPort()}:${sandboxPort()}`]);
  });

  it('the sandbox healthcheck passes against the sandbox started by its own command', async () => {
    const { command, healthcheck } = service('sandbox');
    const port = String(await freePort());
    // The compose command as it is, on loopback and a free port instead of 0.0.0.0:4010.
    const args = command!.slice(2).map((a, i, all) => (all[i - 1] === '--port' ? port : all[i - 1] === '--host' ? '127.0.0.1' : a));
    const sandbox = startCli(args, { env: { PATH: process.env.PATH ?? '' } });
    await sandbox.waitForOutput(/sandbox listening on/, 'the sandbox to listen');
    const [kind, ...argv] = healthcheck!.test;
    expect(kind).toBe('CMD');
    expect(argv.join(' ')).toContain(`127.0.0.1:${sandboxPort()}/`);
    try {
      expect(await runHealthcheck(argv.map((a) => a.replace(`:${sandboxPort()}/`, `:${port}/`)))).toBe(0);
    } finally {
      sandbox.signal('SIGTERM');
      await sandbox.result;
    }
  });

  it('checks PostgreSQL over TCP on the database the worker uses, and Redis for PONG', () => {
    const postgres = service('postgres');
    const pg = postgres.healthcheck!.test;
    expect(pg.slice(0, 2)).toEqual(['CMD', 'pg_isready']);
    // The init-time server listens on the Unix socket only: a socket check would pass too early.
    expect(pg[pg.indexOf('-h') + 1]).toBe('127.0.0.1');
    expect(pg[pg.indexOf('-d') + 1]).toBe(postgres.environment!.POSTGRES_DB);
    // A LOADING error is an answer too (redis-cli exits 0): only PONG means ready.
    expect(service('redis').healthcheck!.test).toEqual(['CMD-SHELL', 'redis-cli ping | grep -q PONG']);
  });

  it('starts the worker only once every service it depends on reports healthy, each with a healthcheck', () => {
    const dependsOn = service('worker').depends_on!;
    expect(Object.keys(dependsOn).sort()).toEqual(['postgres', 'redis', 'sandbox']);
    for (const [name, { condition }] of Object.entries(dependsOn)) {
      expect(condition, name).toBe('service_healthy');
      expect(service(name).healthcheck?.test.length, `${name} healthcheck`).toBeGreaterThan(1);
    }
    // The worker's own healthcheck is the image's HEALTHCHECK (tested above), not overridden here.
    expect(service('worker').healthcheck).toBeUndefined();
  });
});
