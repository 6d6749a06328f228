// Child of test/integration/kubeconfig-bundle.test.ts: load the build's KubeConfig bundle
// (dist/kube/kubeconfig.js), load a kubeconfig of one kind (argv[2]) and print, as one JSON line, what
// client-node's applyToHTTPSOptions made of it (the headers and the agent's class) or the error it
// threw; `fetch` also prints applyToFetchOptions' headers. Run with test/support/import-trace.mjs
// preloaded, the test reads which packages each kind loaded.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const { KubeConfig } = await import(pathToFileURL(join(process.cwd(), 'dist', 'kube', 'kubeconfig.js')).href);
const kind = process.argv[2];
const users = {
  token: { token: 'tok-1' },
  // client-node gcp_auth.ts: runs cmd-path and reads the token and its expiry with JSONPath.
  gcp: {
    'auth-provider': {
      name: 'gcp',
      config: { 'cmd-path': 'echo', 'cmd-args': `'{"t":{"tok":"tok-gcp","exp":"2099-01-01T00:00:00Z"}}'`, 'token-key': '{.t.tok}', 'expiry-key': '{.t.exp}' },
    },
  },
  // client-node oidc_auth.ts: an id-token that expired in 1970 is refreshed through openid-client's discovery.
  oidc: {
    'auth-provider': {
      name: 'oidc',
      config: { 'client-id': 'c', 'id-token': 'eyJhbGciOiJub25lIn0.eyJleHAiOjF9.x', 'refresh-token': 'r', 'idp-issuer-url': 'http://127.0.0.1:9/' },
    },
  },
};
const proxies = { socks: 'socks5://127.0.0.1:1080', 'http-proxy': 'http://127.0.0.1:3128' };
const cluster = { server: 'https://127.0.0.1:6443', ...(proxies[kind] ? { 'proxy-url': proxies[kind] } : {}) };
const config = new KubeConfig();
config.loadFromString(
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user: users[kind] ?? users.token }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  }),
);
const opts = {};
const out = {};
try {
  await config.applyToHTTPSOptions(opts);
  Object.assign(out, { headers: opts.headers, agent: opts.agent?.constructor.name });
  if (kind === 'fetch') out.fetchHeaders = [...(await config.applyToFetchOptions({})).headers.entries()];
} catch (err) {
  Object.assign(out, { error: String(err), code: err.code });
}
process.stdout.write(JSON.stringify(out) + '\n');
