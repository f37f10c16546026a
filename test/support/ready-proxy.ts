/**
 * A load balancer for drain tests, shaped like the Compose proxy's active health checks: it asks
 * every upstream's `/readyz` every `intervalMs` and sends each new TCP connection to the first
 * upstream that answered 200 the last time. A draining API (503) or a closed one (refused) gets
 * no new connection; connections it already has stay where they are until either side closes.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface ReadyProxy {
  url: string;
  /** Connections sent to each upstream so far, in the order given. */
  routed: number[];
  close(): Promise<void>;
}

export async function startReadyProxy(upstreams: string[], intervalMs = 100): Promise<ReadyProxy> {
  const targets = upstreams.map((u) => new URL(u));
  const ready = targets.map(() => false);
  const routed = targets.map(() => 0);
  const sockets = new Set<net.Socket>();
  let stopped = false;

  const check = async () => {
    await Promise.all(
      upstreams.map(async (u, i) => {
        try {
          const res = await fetch(`${u}/readyz`, { signal: AbortSignal.timeout(2_000) });
          await res.arrayBuffer();
          ready[i] = res.ok;
        } catch {
          ready[i] = false;
        }
      }),
    );
  };
  await check();
  let timer: NodeJS.Timeout;
  const loop = () => {
    timer = setTimeout(() => void check().then(() => !stopped && loop()), intervalMs);
  };
  loop();

  const server = net.createServer((client) => {
    const i = ready.indexOf(true);
    if (i < 0) return void client.destroy(); // no upstream ready: the client sees a reset and retries
    routed[i]++;
    const upstream = net.connect(Number(targets[i].port), targets[i].hostname);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.pipe(to);
      from.on('error', () => to.destroy());
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    routed,
    close: async () => {
      stopped = true;
      clearTimeout(timer);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
