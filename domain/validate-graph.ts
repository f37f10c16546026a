// D26: everything that makes a workflow unpublishable, reported all at once so an author
// can fix a graph in one round trip. Shape errors come first; graph checks then run on
// whatever nodes and edges did parse, so one bad node does not hide the rest.
import { deriveContract, type Contract } from './contract';
import {
  EdgeSchema,
  inputPorts,
  MAX_EDGES,
  MAX_NODES,
  NodeSchema,
  nodeTemplates,
  requiredPorts,
  WorkflowDocumentSchema,
  type GraphEdge,
  type GraphNode,
  type WorkflowDocument,
} from './graph';
import { inputValueProblem, isPlainObject } from './input-values';
import { keySkeleton, mixedScripts, normalizeLabel, unsafeCharacter } from './labels';
import { describeProblems, type Problem } from './problems';
import { unstorableJsonProblems } from './storable-json';
import { placeholders, placeholderUses } from './templates';
import { zodIssuesToProblems } from './zod-problems';

export type GraphValidation =
  { ok: true; graph: WorkflowDocument; contract: Contract } | { ok: false; problems: Problem[] };

type At<T> = { index: number; value: T };

/**
 * The most placeholders one template may hold. Each is looked up and copied whenever the template
 * is filled, for every row: a `text` template of 190,000 placeholders took ~24 ms a row, seconds of
 * uninterrupted workflow code for a small list, which crashed the worker again on every retry.
 */
export const MAX_PLACEHOLDER_USES = 1_000;

const code = (s: string) => `\`${s}\``;
const nodePath = (i: number, field?: string) => (field ? `nodes[${i}].${field}` : `nodes[${i}]`);
const edgePath = (i: number, field?: string) => (field ? `edges[${i}].${field}` : `edges[${i}]`);

/** Validates a workflow document (shape and graph, D3, D26); on success returns it parsed with its contract. */
export function validateGraph(doc: unknown): GraphValidation {
  const parsed = WorkflowDocumentSchema.safeParse(doc, { reportInput: true });
  // Free-form fields (meta, defaults, rows, schemas ...) are stored as sent: the store must be able to hold them.
  const storeProblems = unstorableJsonProblems(doc);
  if (parsed.success) {
    const { nodes, edges } = parsed.data;
    const problems = graphProblems(
      nodes.map((value, index) => ({ index, value })),
      edges.map((value, index) => ({ index, value })),
      nodes,
    );
    problems.push(...storeProblems, ...nameProblems(parsed.data.name));
    if (problems.length === 0)
      return { ok: true, graph: parsed.data, contract: deriveContract(parsed.data) };
    return { ok: false, problems };
  }

  const problems = [
    ...zodIssuesToProblems(parsed.error.issues),
    ...storeProblems,
    ...nameProblems(isPlainObject(doc) ? doc.name : undefined),
  ];
  // Without a node list there is no graph to check; past the limits (reported above) none is
  // checked either: the checks (a recursive cycle search among them) rely on those bounds.
  if (
    isPlainObject(doc) &&
    Array.isArray(doc.nodes) &&
    doc.nodes.length <= MAX_NODES &&
    (!Array.isArray(doc.edges) || doc.edges.length <= MAX_EDGES)
  ) {
    const rawNodes: unknown[] = doc.nodes;
    const rawEdges: unknown[] = Array.isArray(doc.edges) ? doc.edges : [];
    problems.push(
      ...graphProblems(parseEach(rawNodes, NodeSchema), parseEach(rawEdges, EdgeSchema), rawNodes),
    );
  }
  return { ok: false, problems };
}

/** The workflow's `name` holding a character no name may hold. */
function nameProblems(name: unknown): Problem[] {
  const bad = typeof name === 'string' ? unsafeCharacter(name) : undefined;
  return bad ? [{ field: 'name', problem: unsafeProblem(bad) }] : [];
}

/** One message naming every problem of a workflow, for the error envelope's `message`. */
export function describeGraphProblems(problems: readonly Problem[]): string {
  return describeProblems(problems, 'Invalid workflow');
}

function parseEach<T>(
  raw: unknown[],
  schema: { safeParse(v: unknown): { success: boolean; data?: T } },
): At<T>[] {
  const out: At<T>[] = [];
  raw.forEach((item, index) => {
    const r = schema.safeParse(item);
    if (r.success) out.push({ index, value: r.data as T });
  });
  return out;
}

function rawField(raw: unknown, key: string): unknown {
  return isPlainObject(raw) ? raw[key] : undefined;
}

/**
 * `nodes`/`edges` are the entries that parsed; `rawNodes` are all entries, so that an edge
 * to a node with a shape error is not also reported as pointing at nothing.
 */
function graphProblems(
  nodes: At<GraphNode>[],
  edges: At<GraphEdge>[],
  rawNodes: readonly unknown[],
): Problem[] {
  const problems: Problem[] = [];
  const add: Add = (field, problem) => problems.push({ field, problem });

  const firstIndexOfId = idOwners(rawNodes, add);
  const byId = new Map<string, At<GraphNode>>();
  for (const n of nodes) if (firstIndexOfId.get(n.value.id) === n.index) byId.set(n.value.id, n);

  const wiring = edgeProblems(edges, firstIndexOfId, byId, add);
  nodeProblems(nodes, byId, wiring, add);

  // An empty node list already has its own shape problem.
  if (rawNodes.length > 0 && !rawNodes.some((raw) => rawField(raw, 'type') === 'user_result')) {
    add('nodes', 'contain no user_result node (a workflow needs at least one to have output)');
  }

  problems.push(
    ...cycleProblems(
      [...byId.values()].map((n) => n.value),
      wiring.links,
    ),
  );
  return problems;
}

/** Reports one problem (problems keep the order they are found in). */
type Add = (field: string, problem: string) => void;

/** What the edges feed, for the node checks and the cycle check. */
interface Wiring {
  /** `${to}\u0000${port}` -> first edge index */
  fed: Map<string, number>;
  /** node id -> number of edges in */
  incoming: Map<string, number>;
  /** edges between parsed nodes, for the cycle check */
  links: At<GraphEdge>[];
}

/** Ids: the first node with an id owns it; later ones are reported. Returns id -> owner's index. */
function idOwners(rawNodes: readonly unknown[], add: Add): Map<string, number> {
  const firstIndexOfId = new Map<string, number>();
  rawNodes.forEach((raw, index) => {
    const id = rawField(raw, 'id');
    if (typeof id !== 'string') return;
    const first = firstIndexOfId.get(id);
    if (first === undefined) firstIndexOfId.set(id, index);
    else
      add(
        nodePath(index, 'id'),
        `repeats the id ${code(id)} of nodes[${first}] (node ids must be unique)`,
      );
  });
  return firstIndexOfId;
}

/** Edges: their ends name nodes, their ports exist, and a port takes one edge. */
function edgeProblems(
  edges: At<GraphEdge>[],
  firstIndexOfId: Map<string, number>,
  byId: Map<string, At<GraphNode>>,
  add: Add,
): Wiring {
  const fed = new Map<string, number>();
  const incoming = new Map<string, number>();
  const links: At<GraphEdge>[] = [];
  // Once a node: scanning a 900 KB template again for each of 2,000 edges held the API's thread 6 s.
  const portsOf = new Map<GraphNode, string[]>();
  for (const { index, value: edge } of edges) {
    for (const end of ['from', 'to'] as const) {
      if (!firstIndexOfId.has(edge[end]))
        add(edgePath(index, end), `is ${code(edge[end])}, which is not a node id`);
    }
    const source = byId.get(edge.from)?.value;
    if (source?.type === 'user_result') {
      add(
        edgePath(index, 'from'),
        `is the user_result node ${code(source.id)}, which has no output`,
      );
    }
    if (!firstIndexOfId.has(edge.to)) continue;
    incoming.set(edge.to, (incoming.get(edge.to) ?? 0) + 1);
    const target = byId.get(edge.to)?.value;
    if (target === undefined) continue; // its node has a shape error, reported already
    if (source !== undefined) links.push({ index, value: edge });

    if (target.type === 'user_input') {
      add(
        edgePath(index, 'to'),
        `is the user_input node ${code(target.id)}, which takes no incoming edges`,
      );
      continue;
    }
    const ports = portsOf.get(target) ?? inputPorts(target);
    portsOf.set(target, ports);
    if (!ports.includes(edge.port)) {
      const accepted =
        ports.length === 0
          ? 'which has no input ports'
          : `whose ports are ${ports.map(code).join(', ')}`;
      add(
        edgePath(index, 'port'),
        `${code(edge.port)} is not an input port of node ${code(target.id)} (${target.type}), ${accepted}`,
      );
      continue;
    }
    if (target.type === 'user_result') continue; // counted below as "exactly one incoming edge"
    const slot = `${edge.to}\u0000${edge.port}`;
    const first = fed.get(slot);
    if (first === undefined) fed.set(slot, index);
    else
      add(
        edgePath(index),
        `feeds port ${code(edge.port)} of node ${code(edge.to)}, which edges[${first}] already feeds (a port takes one edge)`,
      );
  }
  return { fed, incoming, links };
}

type LabelledNode = Extract<GraphNode, { type: 'user_input' | 'user_result' }>;
/** Per node type: normalized label key (or its look-alike skeleton) -> the node that has it first. */
type LabelOwners = Record<LabelledNode['type'], Map<string, At<GraphNode>>>;

/** Nodes, in order: names, fed ports, labels and defaults of every node that owns its id. */
function nodeProblems(
  nodes: At<GraphNode>[],
  byId: Map<string, At<GraphNode>>,
  { fed, incoming }: Wiring,
  add: Add,
): void {
  const labelOwners: LabelOwners = { user_input: new Map(), user_result: new Map() };
  const lookOwners: LabelOwners = { user_input: new Map(), user_result: new Map() };
  for (const at of nodes) {
    const { index, value: node } = at;
    if (byId.get(node.id) !== at) continue; // duplicate id, reported above

    // Ids and placeholders key the engine's value maps; `__proto__` is the one name such a map
    // cannot hold as its own (assigning it replaces the prototype), so it would render empty.
    if (node.id === RESERVED_NAME)
      add(nodePath(index, 'id'), `is ${code(RESERVED_NAME)}, a name reserved by JavaScript`);
    if (node.type !== 'user_result' && inputPorts(node).includes(RESERVED_NAME))
      add(
        nodePath(index, portField(node, RESERVED_NAME)),
        `uses placeholder \`{{${RESERVED_NAME}}}\`, a name reserved by JavaScript (rename it)`,
      );
    for (const [field, template] of nodeTemplates(node)) {
      const uses = placeholderUses(template);
      if (uses > MAX_PLACEHOLDER_USES)
        add(
          nodePath(index, field),
          `holds ${uses} placeholders; a template may hold at most ${MAX_PLACEHOLDER_USES}`,
        );
    }
    if (node.name !== undefined) {
      const bad = unsafeCharacter(node.name);
      if (bad) add(nodePath(index, 'name'), unsafeProblem(bad));
    }

    if (node.type === 'user_result') {
      const n = incoming.get(node.id) ?? 0;
      if (n !== 1)
        add(
          nodePath(index),
          `is the user_result ${JSON.stringify(node.label)} with ${n} incoming edges (it needs exactly one)`,
        );
    } else {
      for (const port of requiredPorts(node)) {
        if (fed.has(`${node.id}\u0000${port}`)) continue;
        add(nodePath(index, portField(node, port)), unfedPortProblem(node, port));
      }
    }

    if (node.type === 'user_input' || node.type === 'user_result')
      labelProblems(at, node, labelOwners, lookOwners, add);

    if (node.type === 'user_input' && node.default !== undefined) {
      const problem = inputValueProblem(node.input_type, node.default);
      if (problem !== undefined)
        add(nodePath(index, 'default'), `${problem} (input_type ${code(node.input_type)})`);
    }
  }
}

/** A user_input or user_result label: plain text, one script per word, a key, and unique (also by look) per type. */
function labelProblems(
  at: At<GraphNode>,
  node: LabelledNode,
  labelOwners: LabelOwners,
  lookOwners: LabelOwners,
  add: Add,
): void {
  const { index } = at;
  const key = normalizeLabel(node.label);
  const bad = unsafeCharacter(node.label);
  const mixed = mixedScripts(key);
  if (bad) {
    add(nodePath(index, 'label'), unsafeProblem(bad));
  } else if (mixed) {
    add(
      nodePath(index, 'label'),
      `${JSON.stringify(node.label)} of node ${code(node.id)} mixes ${mixed.join(' and ')} letters in one word ` +
        '(they look alike: write each word in one script)',
    );
  } else if (key === '') {
    add(
      nodePath(index, 'label'),
      `${JSON.stringify(node.label)} of node ${code(node.id)} normalizes to an empty key (a label needs a letter or digit)`,
    );
  } else {
    const owners = labelOwners[node.type];
    const first = owners.get(key);
    const look = keySkeleton(key);
    const twin = lookOwners[node.type].get(look);
    if (first === undefined) {
      owners.set(key, at);
      if (twin === undefined) lookOwners[node.type].set(look, at);
      else {
        const a = twin.value as { id: string; label: string };
        add(
          nodePath(index, 'label'),
          `${JSON.stringify(node.label)} of node ${code(node.id)} looks like ${JSON.stringify(a.label)} of node ` +
            `${code(a.id)} (nodes[${twin.index}]): their keys ${code(key)} and ${code(normalizeLabel(a.label))} ` +
            'differ only in Greek or Cyrillic letters drawn like Latin ones (rename one)',
        );
      }
    } else {
      const a = first.value as { id: string; label: string };
      add(
        nodePath(index, 'label'),
        `${JSON.stringify(node.label)} of node ${code(node.id)} and ${JSON.stringify(a.label)} of node ${code(a.id)} ` +
          `(nodes[${first.index}]) both normalize to ${code(key)} (${node.type} labels must differ: rename one)`,
      );
    }
  }
}

/** The one name ids and placeholders may not take (see graphProblems). */
const RESERVED_NAME = '__proto__';

const unsafeProblem = (character: string) =>
  `contains ${character}, a control, bidi or invisible character (labels and names are plain text)`;

function portField(node: GraphNode, port: string): string {
  switch (node.type) {
    case 'text':
      return 'template';
    case 'llm':
      return placeholders(node.prompt).includes(port) ? 'prompt' : 'system';
    case 'image_generation':
      return 'prompt';
    case 'model':
      return 'input';
    case 'http_request':
      if (placeholders(node.url).includes(port)) return 'url';
      if (placeholders(node.body ?? '').includes(port)) return 'body';
      return 'headers';
    case 'batch':
      return 'rows';
    default:
      return '';
  }
}

function unfedPortProblem(node: GraphNode, port: string): string {
  switch (node.type) {
    case 'batch':
      return `is missing and no edge feeds port \`rows\` of batch node ${code(node.id)} (give one of the two)`;
    case 'select':
    case 'join':
      return `is the ${node.type} node ${code(node.id)}, which has no edge into its port \`in\``;
    default:
      return `uses placeholder \`{{${port}}}\` but no edge feeds port ${code(port)} of node ${code(node.id)}`;
  }
}

/** One problem per strongly connected component that contains a cycle, naming its nodes. */
function cycleProblems(nodes: GraphNode[], links: At<GraphEdge>[]): Problem[] {
  const out = new Map<string, At<GraphEdge>[]>();
  for (const n of nodes) out.set(n.id, []);
  for (const l of links) out.get(l.value.from)?.push(l);

  // Tarjan's algorithm; recursion depth is bounded by MAX_NODES (validateGraph checks no larger graph).
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  const visit = (v: string) => {
    order.set(v, order.size);
    low.set(v, order.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const { value: e } of out.get(v) ?? []) {
      if (!order.has(e.to)) {
        visit(e.to);
        low.set(v, Math.min(low.get(v)!, low.get(e.to)!));
      } else if (onStack.has(e.to)) {
        low.set(v, Math.min(low.get(v)!, order.get(e.to)!));
      }
    }
    if (low.get(v) === order.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      components.push(component);
    }
  };
  for (const n of nodes) if (!order.has(n.id)) visit(n.id);

  const position = new Map(nodes.map((n, i) => [n.id, i]));
  const found: { closing: number; problem: string }[] = [];
  for (const component of components) {
    const members = new Set(component);
    const selfLoop =
      component.length === 1 &&
      (out.get(component[0]) ?? []).some((l) => l.value.to === component[0]);
    if (component.length === 1 && !selfLoop) continue;
    component.sort((a, b) => position.get(a)! - position.get(b)!);
    const { path, closing } = shortestCycle(component[0], members, out);
    const walk = [...path, path[0]].map(code).join(' → ');
    const problem =
      path.length === component.length
        ? `closes the cycle ${walk} (a workflow must be acyclic)`
        : `closes the cycle ${walk} (a workflow must be acyclic, and nodes ${component.map(code).join(', ')} are all on cycles)`;
    found.push({ closing, problem });
  }
  return found
    .sort((a, b) => a.closing - b.closing)
    .map((c) => ({ field: edgePath(c.closing), problem: c.problem }));
}

/** Breadth-first search from `start` back to itself inside one component. */
function shortestCycle(
  start: string,
  members: Set<string>,
  out: Map<string, At<GraphEdge>[]>,
): { path: string[]; closing: number } {
  const parent = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const v = queue[i];
    for (const { index, value: e } of out.get(v) ?? []) {
      if (!members.has(e.to)) continue;
      if (e.to === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(parent.get(path[0])!);
        return { path, closing: index };
      }
      if (!parent.has(e.to)) {
        parent.set(e.to, v);
        queue.push(e.to);
      }
    }
  }
  throw new Error(
    'unreachable: a strongly connected component always has a cycle through its first node',
  );
}
