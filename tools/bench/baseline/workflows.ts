/**
 * The hand-written baseline of the benchmarks: what "input → text template → result" costs on
 * bare Temporal. Same shape as examples/hello.json (one input, one template, one result) with
 * none of the service's machinery: no run record, no event log, no finalize activity, no
 * search attributes. Its worker runs in the server child on its own task queue
 * (tools/bench/baseline/constants.ts; only workflow functions may be exported from this file).
 */

export interface BareHelloInput {
  name: string;
}

/** input → text template → result. */
export async function bareHello(input: BareHelloInput): Promise<{ greeting: string }> {
  const template = 'Hello, {{name}}!';
  const greeting = template.replace(/\{\{\s*name\s*\}\}/g, input.name);
  return { greeting };
}
