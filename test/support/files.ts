/** Uploads for tests of file inputs (D31, D35): `POST /api/v1/files` with raw bytes, asserting 201. */
import assert from 'node:assert/strict';

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
