// Lint rules, with the module boundaries of STYLE.md §3 as no-restricted-imports per folder.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const monorepo = (...names) =>
  names.map((n) => ({
    group: [`@platform/${n}`, `@platform/${n}/*`],
    message: `this package may not import @platform/${n} (STYLE.md §3)`,
  }));
const relativeInto = (...folders) =>
  folders.map((f) => ({
    group: [`**/${f}/src/**`, `../../${f}/**`, `../../../${f}/**`],
    message: `do not reach into ${f} (STYLE.md §3)`,
  }));

export default tseslint.config(
  { ignores: ['**/node_modules/**', 'data/**', '.tmp/**', '**/generated/**', 'bench/out/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        URL: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        performance: 'readonly',
        queueMicrotask: 'readonly',
        structuredClone: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-explicit-any': 'warn',
    },
  },
  {
    files: ['shared/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...monorepo('control-plane', 'workflows', 'edge-node', 'dns-server'),
            ...relativeInto('control-plane', 'workflows', 'edge-node', 'dns-server'),
          ],
        },
      ],
    },
  },
  {
    files: ['edge-node/**/*.ts', 'dns-server/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...monorepo('control-plane', 'workflows'),
            ...relativeInto('control-plane', 'workflows'),
            { group: ['@temporalio/*'], message: 'nodes never talk to Temporal (STYLE.md §3)' },
          ],
        },
      ],
    },
  },
  {
    // Tenant patterns reach the nodes; a RegExp built at run time backtracks (issue 10: one request stalled a worker).
    files: ['shared/src/match/**/*.ts', 'edge-node/src/**/*.ts', 'dns-server/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='RegExp'], CallExpression[callee.name='RegExp']",
          message: 'patterns built at run time go through RegexPattern or WildcardPattern (@platform/shared/match)',
        },
      ],
    },
  },
  {
    files: ['control-plane/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...monorepo('edge-node', 'dns-server'),
            ...relativeInto('edge-node', 'dns-server'),
            {
              group: ['@temporalio/worker', '@temporalio/workflow', '@temporalio/activity'],
              message: 'the control plane starts workflows by name through @temporalio/client only (STYLE.md §3)',
            },
            {
              group: ['@platform/workflows', '**/workflows/src/**'],
              allowTypeImports: true,
              message: 'only `import type` of workflow signatures (STYLE.md §3)',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['workflows/src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['node:*', 'fs', 'path', 'os', 'crypto', 'http', 'https', 'net', 'dgram', 'dns', 'child_process'],
              message: 'workflow code is deterministic: no Node built-ins (STYLE.md §3)',
            },
            {
              group: ['@platform/shared', '@platform/shared/*', '!@platform/shared/types'],
              message: 'workflow code imports only @platform/shared/types',
            },
            {
              group: ['../activities', '../activities/*'],
              allowTypeImports: true,
              message: 'only `import type` from activities',
            },
            {
              group: [
                '@temporalio/client',
                '@temporalio/worker',
                '@temporalio/activity',
                'dns2',
                'pg',
                'drizzle-orm',
                'drizzle-orm/*',
                'undici',
                'lmdb',
              ],
              message: 'workflow code imports only @temporalio/workflow (STYLE.md §3)',
            },
          ],
        },
      ],
    },
  },
);
