// The seams eslint.config.js keeps, checked on snippets placed where they would live: which directory
// may load ffi-rs, @kubernetes/client-node and host access, and that time and randomness come only
// through src/basics/clock.ts. The zones match any extension, so the snippets are .mjs (no type information
// needed, which keeps this fast).
import { describe, expect, it } from '@jest/globals';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: process.cwd() });

async function problems(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path });
  return result.messages.map((m) => m.ruleId ?? `fatal: ${m.message}`);
}

const FFI = "import 'ffi-rs';\n";
const KUBE = "import '@kubernetes/client-node';\n";
const LAZY_FFI = "await import('ffi-rs');\n";
const FS = "import 'node:fs';\nimport 'fs/promises';\nimport 'node:os';\nimport 'child_process';\n";
const TIMERS = "import 'node:timers/promises';\n";
const CLOCK = 'export const t = Date.now() + Math.random();\nsetTimeout(() => {}, 1);\nsetInterval(() => {}, 1);\n';
const GLOBAL_TIMERS = 'globalThis.setTimeout(() => {}, 1);\nglobalThis.setInterval(() => {}, 1);\n';

describe('eslint.config.js seams', () => {
  it.each([
    ['src/win32/x.mjs', FFI + LAZY_FFI, []],
    ['src/hns/x.mjs', FFI + LAZY_FFI, ['no-restricted-imports', 'no-restricted-syntax']],
    ['src/kube/x.mjs', KUBE, []],
    ['src/subnet/kube/x.mjs', KUBE, ['no-restricted-imports']],
    ['src/subnet/etcd/x.mjs', KUBE, ['no-restricted-imports']],
    ['src/agent.mjs', KUBE, ['no-restricted-imports']],
    ['src/host/x.mjs', FS, []],
    ['src/backends/vxlan/x.mjs', FS, Array<string>(4).fill('no-restricted-imports')],
    ['src/subnet/x.mjs', FS, Array<string>(4).fill('no-restricted-imports')],
    ['src/subnet/kube/x.mjs', FS, Array<string>(4).fill('no-restricted-imports')],
    ['src/kube/x.mjs', FS, Array<string>(4).fill('no-restricted-imports')],
    ['src/basics/clock.mjs', CLOCK + TIMERS, ['no-restricted-properties', 'no-restricted-properties', 'no-restricted-globals', 'no-restricted-globals', 'no-restricted-imports']],
    ['src/basics/clock.ts', CLOCK, []],
    ['src/backends/x.mjs', CLOCK + TIMERS, ['no-restricted-imports', 'no-restricted-properties', 'no-restricted-properties', 'no-restricted-globals', 'no-restricted-globals']],
    ['src/main.mjs', 'process.exit(1);\n', ['no-restricted-properties']],
    ['src/main.ts', 'process.exit(1);\n', []],
    ['src/main.ts', CLOCK + GLOBAL_TIMERS, [...Array<string>(4).fill('no-restricted-properties'), 'no-restricted-globals', 'no-restricted-globals']],
    ['src/hns/x.mjs', GLOBAL_TIMERS, ['no-restricted-properties', 'no-restricted-properties']],
    ['src/win32/x.mjs', TIMERS, ['no-restricted-imports']],
    ['src/kube/x.mjs', TIMERS, ['no-restricted-imports']],
    ['test/unit/x.mjs', FFI + KUBE + FS + TIMERS + CLOCK + 'process.exit(1);\n', []],
  ])(
    '%s',
    async (path, code, want) => {
      expect((await problems(path, code)).sort()).toEqual([...want].sort());
    },
    120_000,
  ); // src/basics/clock.ts starts the TypeScript project service
});
