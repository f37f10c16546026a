/**
 * A lean fake of the OpenAI chat completions API for load (test/fakes/openai.ts keeps every
 * request, which 10,000 rows would not thank us for). Directives in the prompt:
 *   `slow:<ms>`  answer after that delay;
 *   `pad:<n>`    pad the answer with `x` to n characters (answers of a real size, P4b);
 *   `hold`       answer only when `release()` is called (or after 10 minutes);
 *   `tag:<word>` remember when the answer for that tag was sent (P3 measures lag from it);
 *   `failonce:<word>` answer 400 (a refusal: the row's item fails) the first time, then as usual (P9).
 * Listens on 127.0.0.1 only.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeLlm {
  baseUrl: string;
  /** Date.now() at which the answer for each tag was written. */
  answeredAt: Map<string, number>;
  /** Requests received / answered so far. */
  counts: { received: number; answered: number; inFlight: number; maxInFlight: number };
  /** Requests waiting for `release()`. */
  held(): number;
  /** Answers every held request, `spreadMs` apart at most in total (0: all at once). */
  release(spreadMs?: number): void;
  /** Records each request's arrival and answer (Date.now()) until the returned function is called, which hands them over (P9). */
  trace(): () => Array<{ at: number; done: number }>;
  close(): Promise<void>;
}

export async function startFakeLlm(): Promise<FakeLlm> {
  const answeredAt = new Map<string, number>();
  const counts = { received: 0, answered: 0, inFlight: 0, maxInFlight: 0 };
  const holding = new Set<() => void>();
  const refused = new Set<string>();
  let traced: Array<{ at: number; done: number }> | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (traced) {
        const call = { at: Date.now(), done: 0 };
        traced.push(call);
        res.on('finish', () => (call.done = Date.now()));
      }
      counts.received++;
      counts.inFlight++;
      counts.maxInFlight = Math.max(counts.maxInFlight, counts.inFlight);
      let body: any = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      } catch {
        // answered below as an echo of nothing
      }
      const prompt: string =
        body.messages?.map((m: { content: string }) => m.content).join('\n') ?? '';
      const delay = Number(/slow:(\d+)/.exec(prompt)?.[1] ?? 0);
      const failOnce = /failonce:(\S+)/.exec(prompt)?.[1];
      if (failOnce && !refused.has(failOnce)) {
        refused.add(failOnce);
        counts.inFlight--;
        counts.answered++;
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({ error: { message: 'refused once', type: 'invalid_request_error' } }),
        );
        return;
      }
      const tag = /tag:(\S+)/.exec(prompt)?.[1];
      const answer = () => {
        const payload = JSON.stringify({
          id: `chatcmpl-${counts.received}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: padded(`echo: ${body.messages?.at(-1)?.content ?? ''}`, prompt),
              },
              finish_reason: 'stop',
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        });
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
        });
        res.end(payload);
        if (tag) answeredAt.set(tag, Date.now());
        counts.inFlight--;
        counts.answered++;
      };
      if (/\bhold\b/.test(prompt)) {
        const timer = setTimeout(() => release(), 600_000);
        const release = () => {
          clearTimeout(timer);
          if (holding.delete(release)) answer();
        };
        holding.add(release);
      } else if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    answeredAt,
    counts,
    held: () => holding.size,
    release: (spreadMs = 0) => {
      const waiting = [...holding];
      waiting.forEach((go, i) =>
        spreadMs > 0 ? setTimeout(go, (i * spreadMs) / waiting.length) : go(),
      );
    },
    trace: () => {
      const calls: Array<{ at: number; done: number }> = [];
      traced = calls;
      return () => {
        if (traced === calls) traced = undefined;
        return calls;
      };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** An answer padded to the size the prompt's `pad:<n>` asks for (only the last `pad:` counts). */
function padded(text: string, prompt: string): string {
  const sizes = [...prompt.matchAll(/pad:(\d+)/g)];
  const size = Number(sizes.at(-1)?.[1] ?? 0);
  return size > 0 ? text.slice(0, size).padEnd(size, 'x') : text;
}
