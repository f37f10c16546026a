/**
 * A hostile provider's answer (test/ only): a JSON body of `bytes` bytes, or an endless one,
 * written at the pace the client reads (backpressure) so the fake itself never holds it, and
 * stopped as soon as the client goes away. `sent` counts what was written, so a test can show
 * the client cut the answer off near its cap instead of reading it all.
 */
import type http from 'node:http';

const CHUNK = Buffer.alloc(64 * 1024, 'a');

/** Streams `{"…":"aaaa…` (never closed when endless) and resolves with the bytes written once the answer ends or the client leaves. */
export async function streamHugeJson(
  res: http.ServerResponse,
  bytes: number | 'endless',
  onProgress: (sent: number) => void = () => undefined,
): Promise<number> {
  res.writeHead(200, { 'content-type': 'application/json' });
  const head = Buffer.from('{"id":"huge","choices":[{"message":{"content":"');
  const tail = Buffer.from('"}}],"output":null,"status":"processing"}');
  let sent = 0;
  let gone = false;
  res.once('close', () => {
    gone = true;
  });
  const write = async (chunk: Buffer) => {
    sent += chunk.length;
    onProgress(sent);
    if (!res.write(chunk))
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
  };
  await write(head);
  const limit = bytes === 'endless' ? Infinity : bytes - head.length - tail.length;
  let body = 0;
  while (!gone && body < limit) {
    const chunk = limit - body >= CHUNK.length ? CHUNK : CHUNK.subarray(0, limit - body);
    body += chunk.length;
    await write(chunk);
  }
  if (!gone) {
    sent += tail.length;
    onProgress(sent);
    res.end(tail);
  }
  return sent;
}
