// jest in ESM mode (docs/testing.md): swc strips types, tsc type-checks separately.
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  modulePathIgnorePatterns: ['<rootDir>/test/windows/.cache/'],
  testMatch: ['**/*.test.ts'],
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022', experimental: { keepImportAttributes: true } }, module: { type: 'es6' } }],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 30000,
  maxWorkers: 2,
  reporters: process.env.FLANNEL_TEST_SUMMARY ? ['default', '<rootDir>/.ci/summary-reporter.cjs'] : ['default'],
};
