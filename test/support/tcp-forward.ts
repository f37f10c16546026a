/**
 * A plain TCP forward from a local port to a server (`host:port`), for tests of a process started
 * before its server can be reached: the process is given the port while nothing listens on it (an
 * outage: connections refused), and the test opens the forward when the server "comes back".
 */
import net from 'node:net';

export interface TcpForward {
  /** Stops listening and drops every forwarded connection. */
  close(): Promise<void>;
}

/** Listens on 127.0.0.1:`port` and forwards each connection to `target` (`host:port`). */
export async function openTcpForward(port: number, target: string): Promise<TcpForward> {
  const [host, targetPort] = [target.slice(0, target.lastIndexOf(':')), target.split(':').pop()];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(targetPort), host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  return {
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
