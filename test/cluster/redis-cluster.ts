// A real Redis Cluster for one test: redis-server processes in cluster mode on free loopback ports,
// joined by `redis-cli --cluster create`, with a replica per master so a killed master fails over.
// Nothing is persisted; stop() kills every node and removes the temporary folder, also after a
// failed test.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../faults/processes.ts';
import { waitFor } from '../helpers/harness.ts';
import { redisSpawnError, requireRedisPrograms } from '../helpers/tools.ts';

const execFileAsync = promisify(execFile);

/** Runs redis-cli (or another Redis program); not installed becomes the one-line fix. */
async function run(program: string, args: string[], options: { timeout?: number } = {}): Promise<{ stdout: string }> {
  return execFileAsync(program, args, options).catch((error: NodeJS.ErrnoException) => {
    throw redisSpawnError(program, error);
  });
}

export interface RedisClusterOptions {
  masters: number;
  replicasPerMaster: 0 | 1;
  /** cluster-node-timeout: how long a master may be silent before its replica takes over. */
  nodeTimeoutMs: number;
}

interface Node {
  port: number;
  child: ChildProcess;
}

export class RedisClusterProcesses {
  readonly dir = mkdtempSync(join(tmpdir(), 'classroom-sync-cluster-'));
  private nodes: Node[] = [];
  private spawnFailure: Error | undefined;

  constructor(readonly options: RedisClusterOptions) {}

  /** The REDIS_URL that names this cluster (every node as a seed). */
  get url(): string {
    return `redis+cluster://${this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`;
  }

  get ports(): number[] {
    return this.nodes.map((n) => n.port);
  }

  async start(): Promise<void> {
    requireRedisPrograms();
    const count = this.options.masters * (1 + this.options.replicasPerMaster);
    for (let i = 0; i < count; i++) {
      const port = await freePort();
      // The cluster bus listens on port + 10000; pick again if that one is taken.
      if (this.nodes.some((n) => n.port === port) || port + 10_000 > 65_535 || !(await portIsFree(port + 10_000))) {
        i--;
        continue;
      }
      this.nodes.push({ port, child: this.spawnNode(port) });
    }
    // A failed spawn reports on the next tick: fail with its one line rather than time out below.
    await new Promise((resolve) => setImmediate(resolve));
    if (this.spawnFailure) throw this.spawnFailure;
    await Promise.all(this.nodes.map((n) => waitFor(() => this.cli(n.port, 'PING').then((r) => r === 'PONG'), `node ${n.port} to answer`, 10_000)));
    await run('redis-cli', [
      '--cluster',
      'create',
      ...this.nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas',
      String(this.options.replicasPerMaster),
      '--cluster-yes',
    ]);
    await this.waitHealthy();
  }

  private spawnNode(port: number): ChildProcess {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(this.dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        String(this.options.nodeTimeoutMs),
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'noeviction',
        // A replica's first sync starts at once: by default a master waits 5 s for more replicas
        // to serve with the same transfer, and the cluster is not healthy until every replica is linked.
        '--repl-diskless-sync-delay',
        '0',
      ],
      { stdio: 'ignore' },
    );
    // Without a handler a failed spawn is an uncaught 'error' that kills the test file with a stack.
    child.on('error', (error) => {
      this.spawnFailure = redisSpawnError('redis-server', error);
    });
    return child;
  }

  /** Every live node says cluster_state:ok, and every replica is linked to its master. */
  async waitHealthy(timeoutMs = 30_000): Promise<void> {
    const wanted = this.options.masters * this.options.replicasPerMaster;
    await waitFor(
      async () => {
        for (const node of this.live()) {
          if (!(await this.cli(node.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
        }
        let linked = 0;
        for (const node of this.live()) {
          const replication = await this.cli(node.port, 'INFO', 'replication');
          if (/role:slave/.test(replication)) {
            if (!/master_link_status:up/.test(replication)) return false;
            linked += 1;
          }
        }
        return linked === wanted;
      },
      'the Redis Cluster to be healthy',
      timeoutMs,
    );
  }

  async keySlot(key: string): Promise<number> {
    return Number(await this.cli(this.live()[0]!.port, 'CLUSTER', 'KEYSLOT', key));
  }

  async keysInSlot(slot: number, port: number): Promise<number> {
    return Number(await this.cli(port, 'CLUSTER', 'COUNTKEYSINSLOT', String(slot)));
  }

  /** The port of the master that serves `slot`, as a live node sees it now. */
  async masterOf(slot: number, askPort = this.live()[0]!.port): Promise<number | undefined> {
    const { stdout } = await run('redis-cli', ['-p', String(askPort), '--json', 'CLUSTER', 'SHARDS']).catch(() => ({ stdout: '' }));
    // CLUSTER SHARDS (Redis 7): [{ slots: [from, to, ...], nodes: [{ port, role, health }] }]
    const shards = stdout ? (JSON.parse(stdout) as Array<Record<string, unknown>>) : [];
    for (const shard of shards) {
      const slots = shard.slots as number[];
      let covers = false;
      for (let i = 0; i < slots.length; i += 2) if (slot >= slots[i]! && slot <= slots[i + 1]!) covers = true;
      if (!covers) continue;
      const master = (shard.nodes as Array<Record<string, unknown>>).find((n) => n.role === 'master' && n.health === 'online');
      return master ? Number(master.port) : undefined;
    }
    return undefined;
  }

  /** SIGKILLs the node on `port` (no shutdown, no last save: a crashed machine). */
  async kill(port: number): Promise<void> {
    const node = this.nodes.find((n) => n.port === port);
    if (!node || node.child.exitCode !== null || node.child.signalCode !== null) return;
    const exited = new Promise((r) => node.child.once('exit', r));
    node.child.kill('SIGKILL');
    await exited;
  }

  /** Waits until a live node reports cluster_state:ok with `slot` served by a master other than `deadPort`. */
  async waitForFailover(slot: number, deadPort: number, timeoutMs = 30_000): Promise<number> {
    return waitFor(
      async () => {
        for (const node of this.live()) {
          if (!(await this.cli(node.port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return undefined;
        }
        const owner = await this.masterOf(slot);
        return owner !== undefined && owner !== deadPort ? owner : undefined;
      },
      `a replica to take over slot ${slot} from ${deadPort}`,
      timeoutMs,
    );
  }

  live(): Node[] {
    return this.nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.kill(n.port)));
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async cli(port: number, ...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 5_000 });
    return stdout.trim();
  }
}

async function portIsFree(port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
