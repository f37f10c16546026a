import net from 'node:net';

/** Returns a TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('freePort: could not read the port of a listening socket'));
        return;
      }
      const { port } = address;
      server.close((err) => (err ? reject(err) : resolve(port)));
    });
  });
}

/** Resolves true when nothing accepts connections on 127.0.0.1:port (used to check a stopped server let go of its port). */
export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/**
 * Starts a server, again (up to 3 times) when it picked its port with freePort(): another process
 * can take a probed free port before the server binds it. A port the caller chose is not retried.
 */
export async function retryPortRace<T>(start: () => Promise<T>, portGiven: boolean): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (portGiven || attempt >= 3) throw err;
    }
  }
}

/**
 * Free ports below Linux's ephemeral range (32768+), for a server that is stopped and started
 * again on the same port: an ephemeral port can meanwhile become the local end of any outgoing
 * connection (a starting Temporal dev server opens dozens to itself), and then its bind fails.
 */
export async function freeStablePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!ports.has(port) && (await isPortFree(port))) ports.add(port);
  }
  return [...ports];
}
