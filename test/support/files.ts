/** Uploads for tests of file inputs (D31, D35), `POST /api/v1/files` with raw bytes, and the results files of outputs. */
import assert from 'node:assert/strict';
import { parse } from 'csv-parse/sync';

/** Uploads `text` as file `name`; returns its `file_...` id. */
export async function uploadFile(
  url: string,
  key: string,
  name: string,
  text: string,
): Promise<string> {
  const res = await fetch(`${url}/api/v1/files?name=${encodeURIComponent(name)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' },
    body: Buffer.from(text),
  });
  const body = (await res.json()) as { id: string };
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.id;
}

/** The JSON Lines results file of a run's output `key` (D35), parsed; asserts 200. */
export async function resultsFile(url: string, key: string, runId: string, output: string) {
  const res = await fetch(`${url}/api/v1/runs/${runId}/outputs/${output}`, {
    headers: { authorization: `Bearer ${key}`, accept: 'application/x-ndjson' },
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { item_index: number; status: string; parts: any[] });
}

/** The CSV results file of a run's output (D35): its header, its records as csv-parse reads them, and the answer's headers; asserts 200. */
export async function resultsCsv(url: string, key: string, runId: string, output: string) {
  const res = await fetch(`${url}/api/v1/runs/${runId}/outputs/${output}`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/csv' },
  });
  assert.equal(res.status, 200);
  const [header, ...records] = parse(await res.text()) as string[][];
  return { header, records, headers: res.headers };
}
