/**
 * Graphs past the bounds of what a run's workflow does (domain/run-size.ts, patches
 * `text-work-bound`, `run-items-bound`, `inline-reads-bound`, `run-blocks-bound`,
 * `call-input-bound`): each a few KB of graph that, before its bound, aborted the worker or ran
 * into Temporal's limits. Shared by the bounds test and the histories recorded for the replay test.
 */
/** `nodes` text nodes of `template` over input `a` and the `rows` rows of a batch written in the graph. */
export function textGraph(slug: string, nodes: number, rows: number, template: string) {
  const ids = Array.from({ length: nodes }, (_, i) => `t${i}`);
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
      { id: 'b', type: 'batch', rows: Array.from({ length: rows }, () => '') },
      ...ids.map((id) => ({ id, type: 'text', template })),
      { id: 'o', type: 'user_result', label: 'Out' },
    ],
    edges: [
      ...ids.flatMap((id) => [
        { from: 'a', to: id, port: 'a' },
        { from: 'b', to: id, port: 'r' },
      ]),
      { from: ids.at(-1)!, to: 'o' },
    ],
  };
}

/** Input `a` fed `ports` times into one `http_request` (POST, its body the ports and then `tail`). */
export function callInputGraph(slug: string, ports: number, tail = '') {
  const names = Array.from({ length: ports }, (_, i) => `a${i + 1}`);
  return {
    slug,
    nodes: [
      { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
      {
        id: 'h',
        type: 'http_request',
        method: 'POST',
        url: 'http://127.0.0.1:9/',
        body: names.map((n) => `{{${n}}}`).join('') + tail,
      },
      { id: 'o', type: 'user_result', label: 'Out' },
    ],
    edges: [...names.map((port) => ({ from: 'a', to: 'h', port })), { from: 'h', to: 'o' }],
  };
}

/** One `join` of a batch of `rows` empty rows with a separator of `separator` characters. */
export function joinGraph(slug: string, rows: number, separator: number) {
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'b', type: 'batch', rows: Array.from({ length: rows }, () => '') },
      { id: 'j', type: 'join', separator: '-'.repeat(separator) },
      { id: 'o', type: 'user_result', label: 'Out' },
    ],
    edges: [
      { from: 'b', to: 'j' },
      { from: 'j', to: 'o' },
    ],
  };
}

/**
 * A text node that makes `texts` texts of 300 × the input (300,000 lines each of 1,000 short
 * lines), whose lines each of `batches` batches makes rows for `then`: a result itself, or a text
 * node, which keeps so big a list in the store (D35), feeding `results` results.
 */
export function linesGraph(
  slug: string,
  texts: number,
  batches: number,
  then: 'result' | 'text',
  results = 1,
) {
  const ids = Array.from({ length: batches }, (_, i) => i);
  const fed = Array.from({ length: results }, (_, j) => j);
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
      { id: 'q', type: 'batch', rows: Array.from({ length: texts }, () => '') },
      { id: 't', type: 'text', template: '{{a}}'.repeat(300) + '{{q}}' },
      ...ids.flatMap((i) => [
        { id: `b${i}`, type: 'batch' },
        ...(then === 'text' ? [{ id: `r${i}`, type: 'text', template: '<{{x}}>' }] : []),
        ...fed.map((j) => ({ id: `o${i}-${j}`, type: 'user_result', label: `Out ${i} ${j}` })),
      ]),
    ],
    edges: [
      { from: 'a', to: 't', port: 'a' },
      { from: 'q', to: 't', port: 'q' },
      ...ids.flatMap((i) => [
        { from: 't', to: `b${i}`, port: 'rows' },
        ...(then === 'text'
          ? [
              { from: `b${i}`, to: `r${i}`, port: 'x' },
              ...fed.map((j) => ({ from: `r${i}`, to: `o${i}-${j}` })),
            ]
          : fed.map((j) => ({ from: `b${i}`, to: `o${i}-${j}` }))),
      ]),
    ],
  };
}

/** A request's rows (a JSON text) made a list by a batch that `readers` batch nodes read. */
export function readersGraph(slug: string, readers: number) {
  const ids = Array.from({ length: readers }, (_, i) => `n${i}`);
  return {
    slug,
    concurrency: 64,
    nodes: [
      { id: 'r', type: 'user_input', label: 'R', input_type: 'text' },
      { id: 'b', type: 'batch' },
      ...ids.map((id) => ({ id, type: 'batch' })),
      { id: 'o', type: 'user_result', label: 'Out' },
    ],
    edges: [
      { from: 'r', to: 'b', port: 'rows' },
      ...ids.map((id) => ({ from: 'b', to: id, port: 'rows' })),
      { from: 'r', to: 'o' },
    ],
  };
}

/** linesGraph's 900,000 rows in the store (its text node `r0`'s), read by `readers` text nodes. */
export function storedReadersGraph(slug: string, readers: number) {
  const graph = linesGraph(slug, 3, 1, 'text');
  const ids = Array.from({ length: readers }, (_, i) => `n${i}`);
  return {
    ...graph,
    nodes: [...graph.nodes, ...ids.map((id) => ({ id, type: 'text', template: '{{y}}!' }))],
    edges: [...graph.edges, ...ids.map((id) => ({ from: 'r0', to: id, port: 'y' }))],
  };
}

/** One input fed to `results` results. */
export function fanOutGraph(slug: string, results: number) {
  const ids = Array.from({ length: results }, (_, i) => i);
  return {
    slug,
    nodes: [
      { id: 'a', type: 'user_input', label: 'A', input_type: 'text' },
      ...ids.map((i) => ({ id: `o${i}`, type: 'user_result', label: `Out ${i}` })),
    ],
    edges: ids.map((i) => ({ from: 'a', to: `o${i}` })),
  };
}
