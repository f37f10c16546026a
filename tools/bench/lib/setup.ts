/** A benchmark's own setup through the public API: its workflow published, its rows uploaded as a JSON Lines file, its run started. */
import type http from 'node:http';
import type { BenchContext } from '../context';
import { requestJson } from './http';

/** Publishes `doc` for the bench account and clears earlier runs, so the measurement starts on an empty store. */
export async function publishFresh(
  ctx: BenchContext,
  agent: http.Agent,
  doc: { slug: string },
): Promise<void> {
  const published = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/workflows', {
    key: ctx.key,
    body: doc,
  });
  if (published.status !== 201)
    throw new Error(`publish ${doc.slug}: ${published.status} ${JSON.stringify(published.body)}`);
  await ctx.resetRuns();
}

/** Uploads `rows` as a JSON Lines file (`POST /api/v1/files`); its id and size in bytes. */
export async function uploadRows(
  ctx: BenchContext,
  rows: Iterable<unknown>,
): Promise<{ id: string; bytes: number }> {
  const lines: string[] = [];
  for (const row of rows) lines.push(JSON.stringify(row));
  const file = Buffer.from(`${lines.join('\n')}\n`);
  lines.length = 0;
  const uploaded = await fetch(`${ctx.apiUrl}/api/v1/files?name=rows.jsonl`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.key}`, 'content-type': 'application/octet-stream' },
    body: file,
  });
  const body = (await uploaded.json()) as { id?: string };
  if (uploaded.status !== 201 || !body.id)
    throw new Error(`upload: ${uploaded.status} ${JSON.stringify(body).slice(0, 300)}`);
  return { id: body.id, bytes: file.length };
}

/** Starts a run of `slug` (`POST /api/v1/responses`, no stream); its id. */
export async function startRun(
  ctx: BenchContext,
  agent: http.Agent,
  slug: string,
  inputs: Record<string, unknown>,
): Promise<string> {
  const res = await requestJson(agent, ctx.apiUrl, 'POST', '/api/v1/responses', {
    key: ctx.key,
    body: { workflowId: slug, inputs },
  });
  if (res.status !== 202)
    throw new Error(`start: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body.run_id as string;
}
