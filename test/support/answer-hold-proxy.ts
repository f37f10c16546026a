/**
 * A TCP proxy whose answers can be held: once `holdAnswers()` is called, everything the server
 * sends is kept back (requests still reach it), until `release()` lets it through. A client behind
 * it sees a server that did the work it was asked and never said so, as when a network drops
 * answers or a server stalls after committing: the case a deadline cannot tell from "never
 * happened" (e.g. Temporal's answer to a workflow start).
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface AnswerHoldProxy {
  /** `127.0.0.1:<port>`, for clients that take host:port (a gRPC address). */
  address: string;
  holdAnswers(): void;
  /** Sends what was held and forwards answers again. */
  release(): void;
  close(): Promise<void>;
}

/** Starts the proxy in front of `target` (`host:port`). */
export async function startAnswerHoldProxy(target: string): Promise<AnswerHoldProxy> {
  const [host, port] = [
    target.slice(0, target.lastIndexOf(':')),
    target.slice(target.lastIndexOf(':') + 1),
  ];
  let holding = false;
  const held: Array<() => void> = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk) => upstream.write(chunk));
    upstream.on('data', (chunk) => {
      if (holding) held.push(() => client.write(chunk));
      else client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: own } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${own}`,
    holdAnswers: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const send of held.splice(0)) send();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
