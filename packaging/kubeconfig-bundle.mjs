#!/usr/bin/env node
// `npm run build` step after tsc: replaces dist/kube/kubeconfig.js (a re-export of
// @kubernetes/client-node's dist/config.js, where KubeConfig lives) with an esbuild bundle of that
// module and its own files only. client-node has no "exports" map, so its dist files are published
// entry points; but config.js imports the generated index (gen/index.js) for makeApiClient alone, and
// that index evaluates every generated API class and about 900 model classes (+43 MB RSS, +25 MB heap,
// docs/performance.md "What the process loads"). Bundling lets esbuild drop what KubeConfig never reaches: the API
// classes by tree shaking, and the model classes because they are marked side-effect free here (each
// one only defines a class and sets static fields on it). Kubeconfig parsing, the auth plugins (exec,
// token file, OIDC, Azure, GCP) and the TLS options are client-node's code, unchanged.
//
// client-node's third-party imports (js-yaml, hpagent, rfc4648, ...) stay imports of those packages;
// the build fails if one would resolve from dist/ to another copy than client-node itself gets (a nested
// node_modules). Four that only some kubeconfigs reach (LAZY_PACKAGES) load where client-node first uses
// them rather than with the bundle: a kube node with a token or a client certificate never loads them
// (-3 MB heap, about -7 MB RSS at zero Nodes; docs/performance.md "RSS at 5,000 Nodes"). The SEA bundle
// (packaging/build.mjs) bundles this file, each lazy `require` becoming a lazily evaluated module.
//
// Usage: node packaging/kubeconfig-bundle.mjs [DIST_DIR]   (default: dist/ of this repository)
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLIENT_NODE = `${sep}node_modules${sep}@kubernetes${sep}client-node${sep}`;
/** The first line of a bundled file: a second run leaves it alone; packaging/build.mjs credits client-node. */
export const MARKER = '// flanneld: client-node KubeConfig bundle';
const GENERATED = /[\\/]client-node[\\/]dist[\\/]gen[\\/](models|apis)[\\/]/;

/**
 * client-node's dependencies that only some kubeconfigs (or calls the agent never makes) reach, and the
 * exports of each that client-node 1.4 imports. Each becomes a module of wrappers: calling or
 * constructing an export loads the package then and calls or constructs the package's own export, so
 * client-node's code runs unchanged. `require`: CommonJS, loaded synchronously where client-node uses it
 * synchronously; `import`: ESM only, and every use is awaited (its wrappers return promises).
 * - node-fetch (and whatwg-url's tr46 table, 1.7 MB of heap): `Headers` in KubeConfig.applyToFetchOptions
 *   (src/kube/credentials.ts calls applyToHTTPSOptions instead) and the generated clients' fetch.
 * - socks-proxy-agent (socks, smart-buffer): a cluster whose `proxy-url` is socks (KubeConfig.createAgent).
 * - jsonpath-plus: the azure and gcp auth providers' `cmd-path` output (azure_auth.ts, gcp_auth.ts).
 * - openid-client (oauth4webapi, jose): the oidc auth provider's token refresh (oidc_auth.ts).
 */
export const LAZY_PACKAGES = {
  'node-fetch': { load: 'require', exports: ['default', 'Headers'] },
  'socks-proxy-agent': { load: 'require', exports: ['SocksProxyAgent'] },
  'jsonpath-plus': { load: 'require', exports: ['JSONPath'] },
  'openid-client': { load: 'import', exports: ['discovery', 'refreshTokenGrant'] },
};
/** The bundle's own `require` (createRequire): packaging/build.mjs turns its calls into plain `require`s. */
export const LAZY_REQUIRE = '__flanneldLazyRequire';
const LAZY = 'flanneld-lazy';

/** The wrapper module of one LAZY_PACKAGES entry. */
function lazyModule(pkg) {
  const { load, exports } = LAZY_PACKAGES[pkg];
  const lines = [];
  if (load === 'require') {
    lines.push(`import { ${LAZY_REQUIRE} } from ${JSON.stringify(`${LAZY}:require`)};`, 'let mod;', `const load = () => (mod ??= ${LAZY_REQUIRE}(${JSON.stringify(pkg)}));`);
    for (const name of exports) {
      const f = name === 'default' ? 'load()' : `load()[${JSON.stringify(name)}]`;
      const head = name === 'default' ? 'export default function' : `export function ${name}`;
      lines.push(`${head}(...args) { const f = ${f}; return new.target ? new f(...args) : f.apply(this, args); }`);
    }
  } else {
    lines.push('let mod;', `const load = () => (mod ??= import(${JSON.stringify(pkg)}));`);
    for (const name of exports) lines.push(`export async function ${name}(...args) { return (await load())[${JSON.stringify(name)}](...args); }`);
  }
  return lines.join('\n') + '\n';
}

/**
 * Build-time checks of LAZY_PACKAGES: the bundle (in `distDir/kube/`) resolves each to the copy client-node
 * gets, and every wrapped export is a function of it.
 */
async function checkLazyPackages(distDir) {
  const req = createRequire(join(distDir, 'kube', 'kubeconfig.js'));
  const viaClientNode = createRequire(req.resolve('@kubernetes/client-node/dist/config.js'));
  for (const [pkg, { load, exports }] of Object.entries(LAZY_PACKAGES)) {
    if (req.resolve(pkg) !== viaClientNode.resolve(pkg))
      throw new Error(`kubeconfig bundle: "${pkg}" resolves to another copy from dist/ than from client-node; dedupe it (npm dedupe)`);
    const mod = load === 'require' ? req(pkg) : await import(pathToFileURL(req.resolve(pkg)).href);
    for (const name of exports) {
      const f = load === 'require' && name === 'default' ? mod : mod[name];
      if (typeof f !== 'function') throw new Error(`kubeconfig bundle: ${pkg} has no function export "${name}" (update LAZY_PACKAGES)`);
    }
  }
}

function isBuiltin(spec) {
  return spec.startsWith('node:') || builtinModules.includes(spec.split('/')[0]);
}

/** Bundle client-node's own files; keep packages external; model classes are side-effect free. */
function clientNodeOnly() {
  return {
    name: 'flanneld-client-node-only',
    setup(build) {
      build.onLoad({ filter: /.*/, namespace: LAZY }, (args) =>
        args.path === 'require'
          ? { contents: `import { createRequire } from 'node:module';\nexport const ${LAZY_REQUIRE} = createRequire(import.meta.url);\n`, loader: 'js' }
          : { contents: lazyModule(args.path), loader: 'js', resolveDir: args.pluginData },
      );
      build.onResolve({ filter: /.*/ }, async (args) => {
        if (args.kind === 'entry-point' || args.pluginData === 'inner') return undefined;
        if (isBuiltin(args.path)) return { path: args.path, external: true };
        if (args.path === `${LAZY}:require`) return { path: 'require', namespace: LAZY };
        const lazyImport = args.namespace === LAZY;
        if (!lazyImport && args.importer.includes(CLIENT_NODE) && Object.hasOwn(LAZY_PACKAGES, args.path)) return { path: args.path, namespace: LAZY, pluginData: args.resolveDir };
        const fromClientNode = args.importer.includes(CLIENT_NODE);
        if (args.path.startsWith('@kubernetes/client-node/') || (fromClientNode && args.path.startsWith('.'))) {
          const r = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'inner' });
          if (r.errors.length > 0) return { errors: r.errors };
          return GENERATED.test(r.path) ? { ...r, sideEffects: false } : r;
        }
        if (!fromClientNode && !lazyImport) throw new Error(`kubeconfig bundle: unexpected import "${args.path}" from ${args.importer}`);
        // A package client-node imports: it must be the same copy from dist/ as from client-node.
        const viaClientNode = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'inner' });
        const viaDist = await build.resolve(args.path, { kind: args.kind, resolveDir: build.initialOptions.stdin.resolveDir, pluginData: 'inner' });
        if (viaClientNode.path !== viaDist.path) {
          throw new Error(`kubeconfig bundle: "${args.path}" resolves to ${viaDist.path} from dist/ but to ${viaClientNode.path} from client-node; dedupe it (npm dedupe)`);
        }
        return { path: args.path, external: true };
      });
    },
  };
}

/** Replace `<distDir>/kube/kubeconfig.js` by the bundle; returns the client-node files it holds. */
export async function bundleKubeConfig(distDir = join(REPO, 'dist')) {
  const file = join(distDir, 'kube', 'kubeconfig.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: run tsc first`);
  const src = readFileSync(file, 'utf8');
  if (src.startsWith(MARKER)) return undefined;
  if (!src.includes("'@kubernetes/client-node/dist/config.js'"))
    throw new Error(`${file}: not the re-export of client-node's dist/config.js (update packaging/kubeconfig-bundle.mjs)`);
  const esbuild = await import('esbuild');
  const version = createRequire(import.meta.url)('@kubernetes/client-node/package.json').version;
  const result = await esbuild.build({
    stdin: { contents: src.replace(/^\/\/# sourceMappingURL=.*$/m, ''), resolveDir: dirname(file), sourcefile: 'kubeconfig.js', loader: 'js' },
    bundle: true,
    write: false,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    metafile: true,
    logLevel: 'warning',
    banner: { js: `${MARKER} (@kubernetes/client-node ${version} dist/config.js; packaging/kubeconfig-bundle.mjs)` },
    plugins: [clientNodeOnly()],
  });
  const out = Object.values(result.metafile.outputs)[0];
  const inputs = Object.keys(out.inputs).filter((i) => out.inputs[i].bytesInOutput > 0);
  const generated = inputs.filter((i) => GENERATED.test(i));
  if (!out.exports.includes('KubeConfig')) throw new Error('kubeconfig bundle: KubeConfig is not exported');
  if (generated.length > 0) throw new Error(`kubeconfig bundle: generated classes are still in it: ${generated.slice(0, 3).join(', ')}`);
  const eager = out.imports.filter((i) => i.kind === 'import-statement' && Object.hasOwn(LAZY_PACKAGES, i.path));
  if (eager.length > 0) throw new Error(`kubeconfig bundle: ${eager[0].path} is still imported when the bundle loads`);
  await checkLazyPackages(distDir);
  writeFileSync(file, result.outputFiles[0].text);
  rmSync(`${file}.map`, { force: true });
  return inputs.filter((i) => i.includes('client-node'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  await bundleKubeConfig(process.argv[2] ? resolve(process.argv[2]) : undefined);
}
