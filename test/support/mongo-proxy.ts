/**
 * A TCP proxy in front of MongoDB for crash tests. It forwards the wire protocol message by
 * message; once a client message matches `freezeAfter`, it forwards that one and then holds
 * every later byte in both directions, so the process behind it hangs in the middle of what
 * it was doing (the operation that matched has reached the database, its answer comes back
 * only on `thaw`), or never when the test `cut`s the connections. The shared test database is
 * untouched: only this proxy's clients are frozen.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { FERRETDB_MAX_POOL_SIZE } from '../../tools/stack/ferretdb-server';

export interface MongoProxy {
  /** `mongodb://127.0.0.1:<port>/?directConnection=true` */
  uri: string;
  /** Resolves once the matching message has been forwarded and everything after it is held. */
  frozen: Promise<void>;
  /** Sends everything held, in order, and forwards again (never freezing a second time). */
  thaw(): void;
  /**
   * Drops every connection with what it held, as a store restart looks to its clients (the
   * operation that matched reached the database, its answer never comes), and forwards new ones.
   */
  cut(): void;
  close(): Promise<void>;
}

/** True when a wire message holds the BSON string element `name: value` (e.g. a command and its collection). */
export function hasStringElement(message: Buffer, name: string, value: string): boolean {
  const length = Buffer.alloc(4);
  length.writeInt32LE(Buffer.byteLength(value) + 1);
  const needle = Buffer.concat([
    Buffer.from([0x02]),
    Buffer.from(`${name}\0`),
    length,
    Buffer.from(`${value}\0`),
  ]);
  return message.includes(needle);
}

/** Starts the proxy for `targetUri` (host and port are taken from it). */
export async function startMongoProxy(
  targetUri: string,
  freezeAfter: (message: Buffer) => boolean,
): Promise<MongoProxy> {
  const target = new URL(targetUri);
  let frozen = false;
  let thawed = false;
  const held: Array<() => void> = [];
  let markFrozen!: () => void;
  const frozenPromise = new Promise<void>((resolve) => (markFrozen = resolve));
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      // Every wire message starts with its total length (int32, little-endian).
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const size = pending.readInt32LE(0);
        const message = pending.subarray(0, size);
        pending = pending.subarray(size);
        if (frozen) {
          held.push(() => upstream.write(message));
          continue;
        }
        upstream.write(message);
        if (!thawed && freezeAfter(message)) {
          frozen = true;
          markFrozen();
        }
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      if (frozen) held.push(() => client.write(chunk));
      else client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true&maxPoolSize=${FERRETDB_MAX_POOL_SIZE}`,
    frozen: frozenPromise,
    thaw: () => {
      frozen = false;
      thawed = true;
      for (const send of held.splice(0)) send();
    },
    cut: () => {
      thawed = true;
      frozen = false;
      held.length = 0;
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
