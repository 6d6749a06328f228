// ESLint: the recommended rules everywhere, the type-checked ones on TypeScript, and the seams src/ keeps:
//   - ffi-rs only in src/win32/; @kubernetes/client-node only in src/kube/;
//   - no node:fs, node:os or node:child_process in src/backends/, src/subnet/ or src/kube/ (file and host access
//     come in as options whose real defaults are built outside those directories);
//   - time and randomness (Date.now, setTimeout, setInterval, node:timers, Math.random) only in
//     src/basics/clock.ts: everything else takes a Clock or an injected source;
//   - process.exit only in src/main.ts.
// test/, bench/ and scripts/ drive real processes on real timers and are free of the seams.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const EXIT = { object: 'process', property: 'exit', message: 'Only src/main.ts may call process.exit.' };
const CLOCK = 'Take a Clock (src/basics/clock.ts) or injected timers.';
const CLOCK_PROPERTIES = [
  { object: 'Date', property: 'now', message: CLOCK },
  { object: 'Math', property: 'random', message: 'Take a random source as an option; the real default lives in src/basics/clock.ts.' },
  { object: 'globalThis', property: 'setTimeout', message: CLOCK },
  { object: 'globalThis', property: 'setInterval', message: CLOCK },
];
const CLOCK_GLOBALS = [
  { name: 'setTimeout', message: CLOCK },
  { name: 'setInterval', message: CLOCK },
];

/** Modules a directory may not load, each with the reason. */
const restrict = (names, message) => names.map((name) => ({ name, message }));
const withNode = (names) => names.flatMap((n) => [n, `node:${n}`]);
const FFI = restrict(['ffi-rs'], 'Only src/win32/ loads the native layer.');
const KUBE = restrict(['@kubernetes/client-node'], 'Only src/kube/ talks to the API server through client-node.');
const HOST = restrict(
  withNode(['fs', 'fs/promises', 'os', 'child_process']),
  'src/backends/, src/subnet/ and src/kube/ take file and host access as options; build the real default outside them.',
);
const TIMERS = restrict(withNode(['timers', 'timers/promises']), CLOCK);

/** One import zone: static imports (no-restricted-imports) and import() (no-restricted-syntax) of `paths`. */
function importZone(files, paths, ignores = []) {
  const dynamic = paths.map((p) => ({ selector: `ImportExpression[source.value='${p.name}']`, message: p.message }));
  return { files, ignores, rules: { 'no-restricted-imports': ['error', { paths }], 'no-restricted-syntax': ['error', ...dynamic] } };
}

export default tseslint.config(
  { ignores: ['.ci/**', 'dist/**', 'test/windows/.cache/**', 'node_modules/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeCheckedOnly],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Rejecting with what a catch clause caught is a rethrow (only-throw-error allows those too).
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
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
        URL: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error', EXIT],
    },
  },

  // Time and randomness: only src/basics/clock.ts. (Rule options do not merge, so each zone lists all it restricts.)
  { files: ['src/**'], ignores: ['src/basics/clock.ts'], rules: { 'no-restricted-globals': ['error', ...CLOCK_GLOBALS] } },
  { files: ['src/**'], ignores: ['src/main.ts', 'src/basics/clock.ts'], rules: { 'no-restricted-properties': ['error', EXIT, ...CLOCK_PROPERTIES] } },
  { files: ['src/main.ts'], rules: { 'no-restricted-properties': ['error', ...CLOCK_PROPERTIES] } },
  { files: ['scripts/**', 'bench/**', 'test/**'], rules: { 'no-restricted-properties': 'off' } },
  // Test fakes implement async interfaces (HNS, routes, drivers, fs) with synchronous bodies: `async` is
  // what turns their throws into the rejections the real implementations give.
  { files: ['test/**/*.ts'], rules: { '@typescript-eslint/require-await': 'off' } },

  // Imports: later zones override earlier ones for the files they match.
  importZone(['src/**'], [...FFI, ...KUBE, ...TIMERS], ['src/basics/clock.ts']),
  importZone(['src/basics/clock.ts'], [...FFI, ...KUBE]),
  importZone(['src/win32/**'], [...KUBE, ...TIMERS]),
  importZone(['src/backends/**', 'src/subnet/**'], [...FFI, ...KUBE, ...HOST, ...TIMERS]),
  importZone(['src/kube/**'], [...FFI, ...HOST, ...TIMERS]),
);
