// The build's KubeConfig bundle (dist/kube/kubeconfig.js, packaging/kubeconfig-bundle.mjs) loads
// client-node's rarely used dependencies (LAZY_PACKAGES: node-fetch, socks-proxy-agent, jsonpath-plus,
// openid-client) where client-node first uses them: a token user loads none of them, and each kubeconfig
// that needs one still gets client-node's behaviour from it. The expected results are what the bundle
// gave before the change, when the four loaded with it: client-node 1.4's createAgent (a socks
// proxy-url -> SocksProxyAgent, an http(s) one -> hpagent), gcp_auth.ts (cmd-path output read with
// JSONPath), oidc_auth.ts (a refresh calls openid-client's discovery, which in 1.4 is handed the issuer
// as a string and refuses it) and applyToFetchOptions (node-fetch's Headers).
import { beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain .mjs packaging script without type declarations
import { LAZY_PACKAGES } from '../../packaging/kubeconfig-bundle.mjs';

const CHILD = join(process.cwd(), 'test', 'support', 'kubeconfig-bundle-child.mjs');
const TRACE_HOOK = join(process.cwd(), 'test', 'support', 'import-trace.mjs');
const LAZY = Object.keys(LAZY_PACKAGES as object).sort();
let dir: string;

beforeAll(() => {
  if (!existsSync(join(process.cwd(), 'dist', 'kube', 'kubeconfig.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
  dir = mkdtempSync(join(tmpdir(), 'kubeconfig-bundle-'));
});

/** The child's JSON line and which LAZY_PACKAGES it loaded. */
function run(kind: string): { out: unknown; lazyLoaded: string[] } {
  const trace = join(dir, `${kind}.txt`);
  const r = spawnSync(process.execPath, ['--import', TRACE_HOOK, CHILD, kind], {
    env: { PATH: process.env['PATH'] ?? '', FLANNEL_IMPORT_TRACE: trace },
    encoding: 'utf8',
  });
  expect(r.stderr).toBe('');
  const urls = existsSync(trace) ? readFileSync(trace, 'utf8').split('\n') : [];
  return { out: JSON.parse(r.stdout), lazyLoaded: LAZY.filter((p) => urls.some((u) => u.includes(`/node_modules/${p}/`))) };
}

describe("the kubeconfig bundle's lazily loaded dependencies", () => {
  it('a token user over https loads none of them', () => {
    expect(run('token')).toEqual({ out: { headers: { Authorization: 'Bearer tok-1' }, agent: 'Agent' }, lazyLoaded: [] });
  });

  it.each([
    ['socks', { headers: { Authorization: 'Bearer tok-1' }, agent: 'SocksProxyAgent' }, ['socks-proxy-agent']],
    ['http-proxy', { headers: { Authorization: 'Bearer tok-1' }, agent: 'HttpsProxyAgent' }, []],
    ['gcp', { headers: { Authorization: 'Bearer tok-gcp' }, agent: 'Agent' }, ['jsonpath-plus']],
    ['oidc', { error: 'TypeError: "server" must be an instance of URL', code: 'ERR_INVALID_ARG_TYPE' }, ['openid-client']],
    ['fetch', { headers: { Authorization: 'Bearer tok-1' }, agent: 'Agent', fetchHeaders: [['authorization', 'Bearer tok-1']] }, ['node-fetch']],
  ])('%s: client-node behaves as before and loads only what it uses', (kind, out, lazyLoaded) => {
    expect(run(kind)).toEqual({ out, lazyLoaded });
  });
});
