// A TCP proxy on loopback that a test can cut and restore: a real network outage between one
// client and a server (PostgreSQL, say) while everyone else still reaches it.
import { type Socket, connect, createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  /** The port clients connect to. */
  port: number;
  /** Drops every connection and refuses new ones until `restore`. */
  cut(): void;
  restore(): void;
  /** Stops passing bytes either way, connections left open (a server that stopped answering), until `thaw`. */
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<Socket>();
  const pairs = new Set<[Socket, Socket]>();
  let down = false;
  let frozen = false;
  const server = createServer((client) => {
    if (down) return void client.destroy();
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.on('close', () => pairs.delete(pair));
    if (!frozen) client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const cut = () => {
    down = true;
    for (const socket of open) socket.destroy();
  };
  return {
    port: (server.address() as AddressInfo).port,
    cut,
    restore: () => {
      down = false;
    },
    freeze: () => {
      frozen = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
      }
    },
    thaw: () => {
      frozen = false;
      for (const [client, upstream] of pairs) client.pipe(upstream).pipe(client);
    },
    close: () =>
      new Promise<void>((resolve) => {
        cut();
        server.close(() => resolve());
      }),
  };
}
