/** Byte-exact HTTP/1.1 over a plain socket, for requests fetch and node:http refuse to send (CR/LF in headers, unnormalized paths). */
import net from 'node:net';
import type { ApiResponse } from './http';

/** Sends `request` as-is on a new connection and parses the one answer (Content-Length or close delimited). */
export function rawRequest(
  baseUrl: string,
  request: string | Buffer,
  timeoutMs = 10_000,
): Promise<ApiResponse & { raw: string }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(request));
    let data = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `no complete answer within ${timeoutMs} ms: ${data.toString('latin1').slice(0, 300)}`,
        ),
      );
    }, timeoutMs);
    const finish = () => {
      const text = data.toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) return false;
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers = new Headers();
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      const bodyText = text.slice(split + 4);
      const length = headers.get('content-length');
      if (length !== null && Buffer.byteLength(bodyText) < Number(length)) return false;
      let body: unknown = bodyText;
      try {
        body = JSON.parse(bodyText);
      } catch {
        // keep text
      }
      clearTimeout(timer);
      socket.destroy();
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body, raw: text });
      return true;
    };
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      finish();
    });
    socket.on('end', () => {
      if (!finish()) {
        clearTimeout(timer);
        reject(
          new Error(
            `connection closed without a complete answer: ${data.toString('latin1').slice(0, 300)}`,
          ),
        );
      }
    });
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}
