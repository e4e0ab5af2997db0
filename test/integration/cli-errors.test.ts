// The CLI when PostgreSQL is not ready, as a newcomer meets it: no database, no tables, no server.
// Each ends in one line on stderr that names the fix, exit code 1, and no stack trace unless
// --verbose asks for one. Also --version.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeClientsFile } from '../helpers/clients.ts';
import { PG_SERVER, REDIS_URL, dropDatabase } from '../helpers/harness.ts';
import { ROOT, killAllChildren, runCli } from '../helpers/cli.ts';

const id = randomBytes(4).toString('hex');
const missing = `classroom_sync_test_${id}_missing`;
const empty = `classroom_sync_test_${id}_empty`;

beforeAll(async () => {
  // A database that exists but was never migrated.
  const client = new pg.Client({ connectionString: `${PG_SERVER}/postgres` });
  await client.connect();
  try {
    await client.query(`create database ${pg.escapeIdentifier(empty)}`);
  } finally {
    await client.end();
  }
});
afterAll(async () => {
  killAllChildren();
  await dropDatabase(missing);
  await dropDatabase(empty);
});

const envFor = (databaseUrl: string) => ({ DATABASE_URL: databaseUrl, REDIS_URL, QUEUE_PREFIX: `cs-test-${id}` });

/** stderr as lines, without the trailing newline. */
const lines = (stderr: string) => stderr.replace(/\n$/, '').split('\n');

describe('database errors', () => {
  it('no such database: one line naming the database and `migrate`, exit 1', async () => {
    const result = await runCli(['status'], { env: envFor(`${PG_SERVER}/${missing}`) });
    expect(result.code).toBe(1);
    expect(lines(result.stderr)).toEqual([
      `PostgreSQL has no database "${missing}" (${PG_SERVER}/${missing}): create it and its tables with \`npx classroom-sync migrate\`, or fix DATABASE_URL.`,
    ]);
    expect(result.stdout).toBe('');
  });

  it('no tables (never migrated): one line saying to run `migrate`, exit 1', async () => {
    for (const args of [['status'], ['status', 'B-1'], ['history', 'B-1'], ['retry', 'B-1']]) {
      const result = await runCli(args, { env: envFor(`${PG_SERVER}/${empty}`) });
      expect(result.code, args.join(' ')).toBe(1);
      expect(lines(result.stderr), args.join(' ')).toEqual([
        `The database "${empty}" is not migrated (it lacks classroom-sync's tables or columns): run \`npx classroom-sync migrate\`, then this command again.`,
      ]);
    }
  });

  it('PostgreSQL refuses the connection: one line saying to start PostgreSQL, exit 1', async () => {
    const url = 'postgres://postgres:not-a-real-password@127.0.0.1:1/classroom_sync';
    for (const args of [['status'], ['migrate']]) {
      const result = await runCli(args, { env: envFor(url) });
      expect(result.code, args.join(' ')).toBe(1);
      expect(lines(result.stderr), args.join(' ')).toEqual([
        'Cannot reach PostgreSQL at postgres://postgres:***@127.0.0.1:1/classroom_sync (ECONNREFUSED): start PostgreSQL (e.g. `docker compose up -d postgres`), or set DATABASE_URL to a server that runs.',
      ]);
    }
  });

  it('--verbose adds the stack trace and the pg error under it, but never the query parameters', async () => {
    const result = await runCli(['history', 'verbose-batch', '--verbose'], { env: envFor(`${PG_SERVER}/${missing}`) });
    expect(result.code).toBe(1);
    const [first, ...rest] = lines(result.stderr);
    expect(first).toMatch(/^PostgreSQL has no database/);
    expect(rest.join('\n')).toMatch(/^\s+at /m);
    expect(rest.join('\n')).toMatch(/^caused by error: database ".*" does not exist$/m);
    // Without --verbose the same failure shows no stack at all.
    expect((await runCli(['history', 'verbose-batch'], { env: envFor(`${PG_SERVER}/${missing}`) })).stderr).not.toMatch(/^\s+at /m);
  });

  it('a failed query never prints its parameters (they can hold join links), even with --verbose', async () => {
    const result = await runCli(['status', 'param-secret-batch', '--verbose'], { env: envFor(`${PG_SERVER}/${empty}`) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('Failed query: select');
    expect(result.stderr).not.toContain('param-secret-batch');
    expect(result.stderr).not.toContain('params:');
  });
});

describe('access errors', () => {
  it('a worker whose clients file limits an operator or admin to some institutes does not start, and says which and why', async () => {
    const file = writeClientsFile([
      { name: 'north-ops', role: 'operator', instituteIds: ['inst-north'] },
      { name: 'north-admin', role: 'admin', instituteIds: ['inst-north'], hashed: true },
      { name: 'north-lms', role: 'publisher', instituteIds: ['inst-north'] },
    ]);
    try {
      const env = { ...envFor(`${PG_SERVER}/${empty}`), API_CLIENTS_FILE: file.path, PORT: '0' };
      const result = await runCli(['worker'], { env });
      expect(result.code).toBe(2); // a configuration error, as for every other bad setting
      const refused = lines(result.stderr).filter((line) => line.includes('instituteIds:'));
      expect(refused.map((line) => /client "([^"]+)"/.exec(line)?.[1])).toEqual(['north-ops', 'north-admin']);
      for (const line of refused) expect(line).toMatch(/opens the queue dashboard and \/metrics, which show and act on every institute/);
      expect(result.stderr).not.toContain(file.tokens['north-ops']);
      expect(result.stdout).not.toMatch(/worker started/);
    } finally {
      file.remove();
    }
  });
});

describe('--version', () => {
  it('prints the version in package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const result = await runCli(['--version'], { env: {} });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${version}\n`);
  });
});
