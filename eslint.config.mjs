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

/** One folder's import rule; each pattern is { group, message, allowTypeImports? } (one rule per folder: a later one would replace it). */
const boundary = (files, ...patterns) => ({
  files,
  rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
});

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
  boundary(['api/**/*.ts'], {
    group: folders('worker', 'activities', 'cli', 'tools'),
    message: 'api/ never imports worker/, activities/, cli/ or tools/.',
  }),
  // The CLI works on the store and the model, never through the HTTP layer.
  boundary(['cli/**/*.ts'], {
    group: folders('api', 'worker', 'activities'),
    message: 'cli/ uses store/ and domain/, never api/.',
  }),
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
);
