/**
 * P4b (D35): a spreadsheet-sized batch. A JSON Lines file of ~200-byte prompts is uploaded and
 * fed to batch → llm → llm, both llm answers ~2,000 bytes (the fake answers after 50 ms), at
 * concurrency 64. The ideal is pipelined: rows × 2 calls × 50 ms / concurrency. Measured: wall
 * time to the workflow's close, its history (bytes, events), API and worker peak RSS, the live
 * stream (every item event, in order), and the JSON Lines export of the output (every item).
 */
import { Readable } from 'node:stream';
import { parse } from 'csv-parse';
import type { BenchContext, BenchResult, Row } from '../context';
import { keepAliveAgent, openSse } from '../lib/http';
import { fmt, nowMs } from '../lib/stats';
import { publishFresh, startRun, uploadRows } from '../lib/setup';
import { awaitClose } from '../lib/workflow-close';

const HISTORY_BYTES_LIMIT = 10 * 2 ** 20; // Temporal warns from 10 MB
const HISTORY_EVENTS_LIMIT = 20_000;

const CHAIN_WORKFLOW = (fakeMs: number, answerBytes: number, concurrency: number) => ({
  slug: `bench-file-chain-c${concurrency}`,
  name: 'Bench: a file of rows through two llm nodes',
  concurrency,
  nodes: [
    { id: 'rows', type: 'user_input', label: 'Rows', input_type: 'file' },
    { id: 'each', type: 'batch' },
    {
      id: 'first',
      type: 'llm',
      model: 'fake-model',
      prompt: `slow:${fakeMs} pad:${answerBytes} {{row}}`,
    },
    {
      id: 'second',
      type: 'llm',
      model: 'fake-model',
      prompt: `slow:${fakeMs} pad:${answerBytes} {{row}}`,
    },
    { id: 'answers', type: 'user_result', label: 'Answers' },
  ],
  edges: [
    { from: 'rows', to: 'each', port: 'rows' },
    { from: 'each', to: 'first', port: 'row' },
    { from: 'first', to: 'second', port: 'row' },
    { from: 'second', to: 'answers' },
  ],
});

export async function benchFileChain(ctx: BenchContext): Promise<BenchResult> {
  const { rows: n, concurrency, fakeMs, promptBytes, answerBytes, timeoutMs } = ctx.sizes.p4b;
  const agent = keepAliveAgent(4);
  const doc = CHAIN_WORKFLOW(fakeMs, answerBytes, concurrency);
  await publishFresh(ctx, agent, doc);

  // The file: one JSON string of ~promptBytes a line.
  const prompt = (i: number) => `row ${i}: `.padEnd(promptBytes, 'p');
  const tUpload = nowMs();
  const file = await uploadRows(
    ctx,
    Array.from({ length: n }, (_, i) => prompt(i)),
  );
  const uploadMs = nowMs() - tUpload;

  const answeredBefore = ctx.fake.counts.answered;
  ctx.fake.counts.maxInFlight = 0;
  const ideal = (n * 2 * fakeMs) / concurrency;
  const end = ctx.monitor.begin();
  const t0 = nowMs();
  const runId = await startRun(ctx, agent, doc.slug, { rows: file.id });
  const stream = await openSse(
    agent,
    ctx.apiUrl,
    `/api/v1/runs/${runId}/stream?starting_after=0`,
    ctx.key,
  );
  const handle = ctx.temporal.workflow.getHandle(runId);
  const outcome = await awaitClose(handle, timeoutMs);
  const wall = nowMs() - t0;
  const description = await handle.describe().catch(() => undefined);
  const historyBytes = description?.historySize ?? NaN;
  const historyEvents = description?.historyLength ?? NaN;
  await Promise.race([stream.closed, new Promise((r) => setTimeout(r, 120_000))]);
  stream.close();

  // The results file: every item, in order.
  const tExport = nowMs();
  let exported = 0;
  let completed = 0;
  let ordered = true;
  for (let attempt = 0; attempt < 10; attempt++) {
    const answer = await fetch(`${ctx.apiUrl}/api/v1/runs/${runId}/outputs/answers`, {
      headers: { authorization: `Bearer ${ctx.key}`, accept: 'application/x-ndjson' },
    });
    if (answer.status === 503) {
      await answer.body?.cancel();
      await new Promise((r) => setTimeout(r, 2_000)); // the record is being written
      continue;
    }
    let carry = '';
    const decoder = new TextDecoder();
    const take = (line: string) => {
      if (!line) return;
      const item = JSON.parse(line) as { item_index: number; status: string };
      if (item.item_index !== exported) ordered = false;
      exported++;
      if (item.status === 'completed') completed++;
    };
    for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) {
      const parts = (carry + decoder.decode(chunk, { stream: true })).split('\n');
      carry = parts.pop()!;
      parts.forEach(take);
    }
    take(carry);
    break;
  }
  const exportMs = nowMs() - tExport;
  // The same file as CSV (its header, then a record per item), read by csv-parse as it streams.
  const tCsv = nowMs();
  const csvAnswer = await fetch(`${ctx.apiUrl}/api/v1/runs/${runId}/outputs/answers`, {
    headers: { authorization: `Bearer ${ctx.key}`, accept: 'text/csv' },
  });
  let csvRecords = 0;
  let csvOrdered = csvAnswer.status === 200;
  if (csvAnswer.body)
    for await (const record of Readable.fromWeb(csvAnswer.body as never).pipe(
      parse({ from_line: 2 }),
    ))
      if (Number((record as string[])[0]) !== csvRecords++) csvOrdered = false;
  const csvMs = nowMs() - tCsv;
  const usage = end();
  agent.destroy();

  const seq = stream.events
    .map((e) => e.event.sequence_number as number)
    .filter((x) => typeof x === 'number');
  const inOrder = seq.every((x, i) => i === 0 || x === seq[i - 1] + 1);
  const itemEvents = stream.events.filter((e) =>
    String(e.event.type).startsWith('response.output_item.'),
  ).length;
  const ok = outcome === 'closed' && completed === n;
  const ratio = wall / ideal;
  const calls = ctx.fake.counts.answered - answeredBefore;
  const api = usage.peakRssMb.api;
  const worker = usage.peakRssMb.worker;
  const rows: Row[] = [
    {
      case: `${n} file rows → llm → llm: POST → workflow closed`,
      n: 1,
      throughput: ok ? (n / wall) * 1000 : undefined,
      ratio: ok ? ratio : undefined,
      usage,
      note: `wall ${fmt(wall / 1000, 1)} s vs pipelined ideal ${fmt(ideal / 1000, 1)} s; ${calls} calls, at most ${ctx.fake.counts.maxInFlight} in flight; history ${historyEvents} events, ${fmt(historyBytes / 2 ** 20, 2)} MB; upload of ${fmt(file.bytes / 2 ** 20, 1)} MB took ${fmt(uploadMs / 1000, 1)} s`,
    },
    {
      case: `${n} items: JSON Lines export`,
      n: 1,
      p50: exportMs,
      note: `${exported} items (${completed} completed), ${ordered ? 'in order' : '**out of order**'}`,
    },
    {
      case: `${n} items: CSV export`,
      n: 1,
      p50: csvMs,
      note: `${csvRecords} records, ${csvOrdered ? 'in order' : '**out of order**'} (the pages parsed into items, each written as a CSV line)`,
    },
  ];
  const verdicts: BenchResult['verdicts'] = [
    {
      target: `P4b: ${n} file rows, batch → llm → llm at c=${concurrency}, complete in ≤ 1.5× the pipelined ideal (${fmt((ideal * 1.5) / 1000, 0)} s)`,
      measured: ok
        ? `${fmt(wall / 1000, 1)} s (${fmt(ratio, 2)}×)`
        : `did not complete (${outcome}, ${completed}/${n} items)`,
      met: ok && ratio <= 1.5,
    },
    {
      target: `P4b: history ≤ 10 MB and ≤ ${HISTORY_EVENTS_LIMIT} events`,
      measured: `${fmt(historyBytes / 2 ** 20, 2)} MB, ${historyEvents} events`,
      met: historyBytes <= HISTORY_BYTES_LIMIT && historyEvents <= HISTORY_EVENTS_LIMIT,
    },
    {
      target: 'P4b: worker and API peak RSS ≤ 512 MB each',
      measured: `API ${fmt(api, 0)} MB, worker ${fmt(worker, 0)} MB`,
      met: api <= 512 && worker <= 512,
    },
    {
      target: `P4b: the stream carries all ${2 * n} item events in order`,
      measured: `${itemEvents}, ${inOrder ? 'in order' : 'out of order'}${stream.done ? ', then [DONE]' : ', no [DONE]'}`,
      met: itemEvents === 2 * n && inOrder,
    },
    {
      target: `P4b: the JSON Lines export of all ${n} items takes ≤ 10 s`,
      measured: `${fmt(exportMs / 1000, 2)} s, ${exported} items${ordered ? '' : ', out of order'}`,
      met: exported === n && ordered && exportMs <= 10_000,
    },
  ];
  ctx.log(
    `P4b ${n} file rows: ${ok ? 'completed' : `NOT completed (${outcome})`} in ${fmt(wall / 1000, 1)} s (ideal ${fmt(ideal / 1000, 1)} s), history ${historyEvents} events / ${fmt(historyBytes / 2 ** 20, 2)} MB, export ${fmt(exportMs / 1000, 2)} s, CSV ${fmt(csvMs / 1000, 2)} s`,
  );
  return {
    id: 'p4b',
    title: `P4b — a file of ${n} rows through batch → llm → llm (answers of ${answerBytes} bytes, the fake answers in ${fakeMs} ms, concurrency ${concurrency})`,
    baseline: `the pipelined ideal rows × 2 × ${fakeMs} ms / concurrency; ratio = wall / ideal`,
    unit: 'ms',
    rows,
    verdicts,
    details: [],
  };
}
