// Lint rules: typescript-eslint's recommended set, promises that are never left floating (a lost
// rejection is a crash or a silent failure in a server), and one import order. Formatting is
// Prettier's job (eslint-config-prettier turns off the rules that would fight it).
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/dist/', '**/node_modules/', 'data/', 'coverage/', 'sdk/python/', '**/*.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'simple-import-sort': simpleImportSort },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Node's modules, then packages, then our own, each in alphabetical order, with no blank lines between.
      'simple-import-sort/imports': ['error', { groups: [['^node:', '^@?\\w', '^\\.']] }],
      'simple-import-sort/exports': 'error',
    },
  },
  prettier,
);
