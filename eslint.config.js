// ESLint for frost: typescript-eslint's recommended rules plus the type-aware ones that catch real bugs
// (promises nobody awaits, values nobody reads). Formatting is Prettier's job (`npm run format`).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', 'runs/', 'artifacts/', 'dist/', 'data/', 'reports/', '**/*.py'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's test() and describe() return promises the runner itself awaits.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      // Bit tricks belong in the few files that hash, pack or emit binary formats; each says so on its first line.
      'no-bitwise': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-explicit-any': 'error',
      // A `let` assigned once inside a callback it is declared before is not a constant.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false },
      ],
      // Prettier wraps code at 120 columns; this catches the comments and strings it leaves alone.
      'max-len': [
        'error',
        { code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
      ],
    },
  },
  {
    // Tests and benchmarks build binary fixtures (PNG chunks, CRCs, float bit patterns) by hand.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-bitwise': 'off' },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
