// The linter's job here is the architecture: which folder may import which (docs/architecture.md
// "Layout"), plus the few rules that keep the house rules true. Formatting is prettier's.
import tseslint from 'typescript-eslint';

/** `no-restricted-imports` patterns for relative imports of the given top-level folders, from a file one folder deep. */
const folders = (...names) =>
  names.flatMap((name) => [
    `../${name}`,
    `../${name}/*`,
    `../../${name}`,
    `../../${name}/*`,
    `../../../${name}/*`,
  ]);

/** `no-restricted-imports` patterns for a sibling folder or module inside api/, from a file one folder deep in api/. */
const apiFolders = (...names) => names.flatMap((name) => [`../${name}`, `../${name}/*`]);

/** What no file of api/ imports (kept in every api/ rule: a later rule replaces an earlier one). */
const API_OUTSIDE = {
  group: folders('worker', 'activities', 'cli', 'tools'),
  message: 'api/ never imports worker/, activities/, cli/ or tools/.',
};

/** One folder's import rule; each pattern is { group, message, allowTypeImports? } (one rule per folder: a later one would replace it). */
const boundary = (files, ...patterns) => ({
  files,
  rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
});

// Every outbound HTTP request of worker code goes through the SSRF guard, lib/net/ssrf.ts (the only
// file exempt): URL inputs, http_request nodes, webhooks, provider calls and the URLs in provider
// answers. No fetch, no http(s).request, no HTTP client library elsewhere (docs/workflow-format.md
// "Providers"); test/lib/net/guard-lint.unit.test.ts proves these rules catch each form.
const GUARD =
  'Outbound requests go through the SSRF guard: guardedFetch/guardedGet of lib/net/ssrf.ts.';
const GUARDED_FILES = [
  'activities/**/*.ts',
  'lib/**/*.ts',
  'worker/**/*.ts',
  'workflows/**/*.ts',
  'store/**/*.ts',
];
const NETWORK_MODULES = ['http', 'https', 'http2', 'net', 'tls', 'dgram'];
const HTTP_CLIENTS = [
  'undici',
  'node-fetch',
  'cross-fetch',
  'axios',
  'got',
  'ky',
  'superagent',
  'needle',
  'request',
  'openai',
  'replicate',
];
const NETWORK = `/^(node:)?(${NETWORK_MODULES.join('|')}|${HTTP_CLIENTS.join('|')})$/`;
const REQUEST_GLOBALS = ['fetch', 'XMLHttpRequest', 'WebSocket', 'EventSource'];
const guardSyntax = [
  {
    selector: `MemberExpression[object.name=/^(globalThis|global|self|window)$/][property.name=/^(${REQUEST_GLOBALS.join('|')})$/]`,
    message: GUARD,
  },
  {
    selector: `CallExpression[callee.name='require'] > Literal[value=${NETWORK}]`,
    message: GUARD,
  },
  { selector: `ImportExpression > Literal[value=${NETWORK}]`, message: GUARD },
  {
    selector: `MemberExpression[object.name=/^(http|https|http2|net|tls)$/][property.name=/^(request|get|connect|createConnection|Agent)$/]`,
    message: GUARD,
  },
];
const guardRules = {
  'no-restricted-globals': ['error', ...REQUEST_GLOBALS.map((name) => ({ name, message: GUARD }))],
  'no-restricted-syntax': ['error', ...guardSyntax],
};

// Every collection query lives in store/ (one function per query, named for what it reads or
// writes): no `db.collection(...)` and no `<x>.<collection>.find(...)`-style call elsewhere.
// tools/ (the benchmarks read the store directly) and tests are exempt;
// test/store/query-lint.unit.test.ts proves the rule catches each form.
const STORE_ONLY = 'Collection queries live in store/: add or reuse a store function.';
const COLLECTIONS = [
  'accounts',
  'apiKeys',
  'workflows',
  'workflowVersions',
  'runs',
  'runChunks',
  'itemBlocks',
  'ledger',
  'ledgerCheckpoints',
  'creditHolds',
  'rateLimits',
  'idempotencyKeys',
  'webhookDeliveries',
];
const QUERY_METHODS = [
  'find',
  'findOne',
  'findOneAndUpdate',
  'findOneAndDelete',
  'findOneAndReplace',
  'aggregate',
  'countDocuments',
  'estimatedDocumentCount',
  'distinct',
  'insertOne',
  'insertMany',
  'updateOne',
  'updateMany',
  'replaceOne',
  'deleteOne',
  'deleteMany',
  'bulkWrite',
  'watch',
  'createIndex',
  'createIndexes',
  'dropIndex',
  'drop',
];
const storeOnlySyntax = [
  { selector: `CallExpression[callee.property.name='collection']`, message: STORE_ONLY },
  {
    selector: `MemberExpression[object.type='MemberExpression'][object.property.name=/^(${COLLECTIONS.join('|')})$/][property.name=/^(${QUERY_METHODS.join('|')})$/]`,
    message: STORE_ONLY,
  },
];
const STORE_ONLY_FILES = [
  'api/**/*.ts',
  'activities/**/*.ts',
  'cli/**/*.ts',
  'config/**/*.ts',
  'lib/**/*.ts',
  'worker/**/*.ts',
  'workflows/**/*.ts',
];
const clientImports = HTTP_CLIENTS.map((name) => ({ name, message: GUARD }));

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'dist/**',
      'clients/python/**',
      'tools/stack/compose-check/**',
      'tools/bench/profiles/**',
    ],
  },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
  },
  // domain/ is the pure model: it imports nothing of ours (the workflow sandbox loads it).
  boundary(['domain/**/*.ts'], {
    group: ['../*', '../../*'],
    message: 'domain/ imports nothing of ours outside domain/.',
  }),
  // workflows/ is deterministic workflow code: the model, and the activities' types (never their code).
  boundary(
    ['workflows/**/*.ts'],
    {
      group: folders(
        'api',
        'store',
        'lib',
        'config',
        'worker',
        'cli',
        'clients',
        'tools',
        'playground',
      ),
      message: 'workflows/ imports only domain/ (and activity types).',
    },
    {
      group: folders('activities'),
      message: 'workflows/ imports activities as types only (import type).',
      allowTypeImports: true,
    },
  ),
  // store/ is below the API: the API uses the store, never the other way round.
  boundary(['store/**/*.ts'], {
    group: folders('api', 'worker', 'activities', 'cli', 'tools'),
    message: 'store/ never imports api/, worker/, activities/, cli/ or tools/.',
  }),
  // lib/ holds what the API and the worker share (codec, files, SSRF guard, webhooks, metrics).
  boundary(['lib/**/*.ts'], {
    group: folders('api', 'worker', 'activities', 'workflows', 'cli', 'tools'),
    message: 'lib/ is shared by the API and the worker: it imports neither.',
  }),
  // The API and the worker are separate processes: the API never loads activity or worker code.
  boundary(['api/**/*.ts'], API_OUTSIDE),
  // Inside api/, one way too (docs/architecture.md "Inside api/"): routes use the concerns; the
  // use cases of runs/ use workflows/, files/, limits/ and stream/'s event builders; those
  // concerns use none of runs/, and nothing below the routes reaches a route or the wiring.
  boundary(['api/runs/**/*.ts'], API_OUTSIDE, {
    group: apiFolders('routes', 'middleware', 'deps', 'app', 'start-api'),
    message: 'api/runs/ never imports routes/, middleware/ or the wiring (deps, app, start-api).',
  }),
  boundary(
    ['api/{workflows,files,limits,stream,auth,temporal,contract,errors}/**/*.ts'],
    API_OUTSIDE,
    {
      group: apiFolders('routes', 'runs', 'middleware', 'deps', 'app', 'start-api'),
      message:
        'Below the use cases: never imports api/runs/, routes/, middleware/ or the wiring (deps, app, start-api).',
    },
  ),
  // The CLI works on the store and the model, never through the HTTP layer.
  boundary(['cli/**/*.ts'], {
    group: folders('api', 'worker', 'activities'),
    message: 'cli/ uses store/ and domain/, never api/.',
  }),
  // config/ is below everything that reads it: of ours it may use the model only.
  boundary(['config/**/*.ts'], {
    group: folders(
      'api',
      'store',
      'lib',
      'workflows',
      'activities',
      'worker',
      'cli',
      'clients',
      'tools',
      'playground',
    ),
    message: 'config/ imports only domain/.',
  }),
  // activities/ run in the worker: never the API, the CLI or tools; workflow definitions as types.
  boundary(
    ['activities/**/*.ts'],
    {
      group: folders('api', 'worker', 'cli', 'tools', 'clients', 'playground'),
      message: 'activities/ never import api/, worker/, cli/, tools/, clients/ or playground/.',
    },
    {
      group: folders('workflows'),
      message: 'activities/ import workflows/ as types only (import type).',
      allowTypeImports: true,
    },
  ),
  // worker/ wires activities and workflows into a Temporal worker: never the API's code.
  boundary(['worker/**/*.ts'], {
    group: folders('api', 'cli', 'tools', 'clients', 'playground'),
    message: 'worker/ never imports api/, cli/, tools/, clients/ or playground/.',
  }),
  // The clients ship alone: the API's and the model's types, and the model's pure helpers.
  boundary(
    ['clients/**/*.ts'],
    {
      group: folders(
        'store',
        'lib',
        'config',
        'workflows',
        'activities',
        'worker',
        'cli',
        'tools',
        'playground',
      ),
      message: 'clients/ import only domain/ (and api/ types).',
    },
    {
      group: folders('api'),
      message: 'clients/ import api/ as types only (import type).',
      allowTypeImports: true,
    },
  ),
  // The playground is a browser bundle: the model's pure helpers and the client, nothing server-side.
  boundary(['playground/**/*.ts'], {
    group: folders(
      'api',
      'store',
      'lib',
      'config',
      'workflows',
      'activities',
      'worker',
      'cli',
      'tools',
    ),
    message: 'playground/ imports only domain/ and clients/.',
  }),
  // Product code reads in small pieces: a function over 80 lines says why in a disable comment.
  {
    files: [
      'api/**/*.ts',
      'activities/**/*.ts',
      'workflows/**/*.ts',
      'store/**/*.ts',
      'domain/**/*.ts',
      'worker/**/*.ts',
      'config/**/*.ts',
      'lib/**/*.ts',
      'cli/**/*.ts',
      'clients/**/*.ts',
      'playground/**/*.ts',
    ],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  // Configuration is parsed once (config/); entry points hand process.env to loadConfig.
  {
    files: [
      'api/**/*.ts',
      'workflows/**/*.ts',
      'activities/**/*.ts',
      'worker/**/*.ts',
      'domain/**/*.ts',
      'store/**/*.ts',
      'lib/**/*.ts',
      'cli/**/*.ts',
    ],
    ignores: ['api/main.ts', 'worker/main.ts', 'cli/wrs.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration from config/ (loadConfig), not process.env.',
        },
      ],
    },
  },
  { files: GUARDED_FILES, ignores: ['lib/net/ssrf.ts'], rules: guardRules },
  // Collection queries only in store/. One `no-restricted-syntax` per file (a later setting replaces
  // an earlier one), so where the SSRF guard applies too its selectors are repeated here.
  {
    files: STORE_ONLY_FILES,
    rules: { 'no-restricted-syntax': ['error', ...storeOnlySyntax] },
  },
  {
    files: GUARDED_FILES,
    ignores: ['lib/net/ssrf.ts', 'store/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', ...guardSyntax, ...storeOnlySyntax] },
  },
  {
    files: GUARDED_FILES,
    ignores: ['lib/net/ssrf.ts', 'worker/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...NETWORK_MODULES.flatMap((m) => [m, `node:${m}`]).map((name) => ({
              name,
              message: GUARD,
            })),
            ...clientImports,
          ],
        },
      ],
    },
  },
  // The worker serves /metrics over node:http: servers are fine, client calls are not.
  {
    files: ['worker/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...['http', 'https', 'http2'].flatMap((m) =>
              [m, `node:${m}`].map((name) => ({
                name,
                importNames: ['request', 'get', 'connect', 'Agent', 'ClientRequest'],
                message: GUARD,
              })),
            ),
            ...['net', 'tls', 'dgram']
              .flatMap((m) => [m, `node:${m}`])
              .map((name) => ({
                name,
                message: GUARD,
              })),
            ...clientImports,
          ],
        },
      ],
    },
  },
);
