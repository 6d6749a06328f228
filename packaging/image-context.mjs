#!/usr/bin/env node
// `npm run package:image-context`: lays out the build context of Dockerfile.windows from the release zip
// that `npm run package:windows` made, so the HostProcess image holds exactly what the zip ships:
//
//   dist/image-context/
//     Dockerfile.windows        (a copy of the repo's)
//     flanneld/                 (the zip's contents: flanneld.exe, node_modules\ffi-rs, notices, ...;
//                                its deploy/ and scripts/ files must be git-tracked ones, else it stops)
//     no-cni-plugins/           (a README only: the default CNI_PLUGINS build argument)
//     cni-plugins/              (with --cni-plugins DIR: the pinned release files, hashes checked)
//
// Then: docker buildx build --platform windows/amd64 -f dist/image-context/Dockerfile.windows \
//         -t REGISTRY/flanneld-windows:VERSION --push dist/image-context
//
// Options: --zip FILE (default dist/flanneld-windows-amd64.zip), --out-dir DIR (default dist/image-context),
// --image REF (print the docker and kustomize lines for this image reference), --cni-plugins DIR (a folder
// holding the files src/cni-plugins/pinned.json pins, by their release file names: flannel-amd64.exe and
// cni-plugins-windows-amd64-<version>.tgz, and for dual-stack nodes, when it is there,
// windows-container-networking-cni-amd64-<version>.zip (sdnbridge.exe); each is checked against its SHA-256
// pin and put in the image, built with --build-arg CNI_PLUGINS=cni-plugins).
import { createHash } from 'node:crypto';
import { createWriteStream, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { untrackedEntries } from './tracked-files.mjs';

const require = createRequire(import.meta.url);
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** What the DaemonSet runs ($CONTAINER_SANDBOX_MOUNT_POINT\flanneld\flanneld.exe) and what it needs beside it. */
const REQUIRED = ['flanneld.exe', 'node_modules/ffi-rs/package.json'];

function parseArgs(argv) {
  const o = { zip: join(REPO, 'dist', 'flanneld-windows-amd64.zip'), outDir: join(REPO, 'dist', 'image-context'), image: '', cniPlugins: '' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--zip') o.zip = resolve(value());
    else if (a === '--out-dir') o.outDir = resolve(value());
    else if (a === '--image') o.image = value();
    else if (a === '--cni-plugins') o.cniPlugins = resolve(value());
    else throw new Error(`unknown option ${a} (options: --zip FILE, --out-dir DIR, --image REF, --cni-plugins DIR)`);
  }
  return o;
}

/** Extract every file of the zip under `dest` (yauzl rejects absolute and `..` entry names). */
async function unzip(zipPath, dest) {
  const yauzl = require('yauzl');
  const zip = await new Promise((res, rej) => yauzl.open(zipPath, { lazyEntries: true }, (err, z) => (err ? rej(err) : res(z))));
  const names = [];
  await new Promise((res, rej) => {
    zip.on('error', rej);
    zip.on('end', res);
    zip.on('entry', (entry) => {
      if (entry.fileName.endsWith('/')) return zip.readEntry();
      const target = join(dest, ...entry.fileName.split('/'));
      if (!target.startsWith(dest + sep)) return rej(new Error(`zip entry ${entry.fileName} points outside the context`));
      names.push(entry.fileName);
      zip.openReadStream(entry, (err, stream) => {
        if (err) return rej(err);
        mkdirSync(dirname(target), { recursive: true });
        pipeline(stream, createWriteStream(target)).then(() => zip.readEntry(), rej);
      });
    });
    zip.readEntry();
  });
  return names;
}

export async function imageContext(opts) {
  if (!existsSync(opts.zip)) throw new Error(`${opts.zip} is missing: run npm run package:windows first`);
  rmSync(opts.outDir, { recursive: true, force: true });
  const files = join(opts.outDir, 'flanneld');
  mkdirSync(files, { recursive: true });
  const names = await unzip(opts.zip, files);
  // The zip carries deploy/ and scripts/ from the repository: only what git tracks there may go into an
  // image (a zip made by an older build.mjs could hold an operator's untracked overlay).
  const untracked = untrackedEntries(REPO, names, ['deploy', 'scripts']);
  if (untracked.length > 0) {
    rmSync(opts.outDir, { recursive: true, force: true });
    throw new Error(
      `${opts.zip} holds files git does not track: ${untracked.slice(0, 5).join(', ')}${untracked.length > 5 ? ', ...' : ''}; rebuild it with npm run package:windows`,
    );
  }
  const missing = REQUIRED.filter((r) => !names.includes(r));
  if (missing.length > 0) throw new Error(`${opts.zip} lacks ${missing.join(', ')}: not a flanneld-windows package`);
  cpSync(join(REPO, 'Dockerfile.windows'), join(opts.outDir, 'Dockerfile.windows'));
  mkdirSync(join(opts.outDir, 'no-cni-plugins'), { recursive: true });
  writeFileSync(join(opts.outDir, 'no-cni-plugins', 'README.txt'), 'No CNI plugins in this image: install-cni downloads the pinned releases.\r\n');
  const pins = opts.releases ? { releases: opts.releases, dualStack: opts.dualStack ?? [] } : JSON.parse(readFileSync(join(REPO, 'src', 'cni-plugins', 'pinned.json'), 'utf8'));
  const plugins = opts.cniPlugins ? copyPinnedPlugins(opts.cniPlugins, join(opts.outDir, 'cni-plugins'), pins.releases, pins.dualStack) : [];
  return { outDir: opts.outDir, files: names.length, plugins };
}

/** Copy the pinned release files from `dir` to `dest`, each checked against its SHA-256 pin; an `optional` one only when it is there. */
function copyPinnedPlugins(dir, dest, releases, optional = []) {
  mkdirSync(dest, { recursive: true });
  const present = optional.filter((r) => existsSync(join(dir, basename(new URL(r.url).pathname))));
  return [...releases, ...present].map((r) => {
    const name = basename(new URL(r.url).pathname);
    const src = join(dir, name);
    if (!existsSync(src)) throw new Error(`--cni-plugins: ${src} is missing (download ${r.url})`);
    const data = readFileSync(src);
    const actual = createHash('sha256').update(data).digest('hex');
    if (actual !== r.sha256) throw new Error(`--cni-plugins: ${src} has SHA-256 ${actual}, not the pinned ${r.sha256} (${r.repository} ${r.version})`);
    writeFileSync(join(dest, name), data);
    return name;
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const opts = parseArgs(process.argv.slice(2));
  imageContext(opts).then(
    (r) => {
      const version = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).version;
      const image = opts.image || `REGISTRY/flanneld-windows:${version}`;
      const at = image.lastIndexOf(':') > image.lastIndexOf('/') ? image.lastIndexOf(':') : -1;
      const [name, tag] = at < 0 ? [image, 'latest'] : [image.slice(0, at), image.slice(at + 1)];
      process.stdout.write(
        `image-context: ${r.files} files in ${r.outDir}${r.plugins.length ? `; CNI plugins in the image: ${r.plugins.join(', ')}` : ''}\n\n` +
          `Build and push (BuildKit builds a COPY-only Windows image on Linux):\n` +
          `  docker buildx build --platform windows/amd64 --build-arg VERSION=${version}${r.plugins.length ? ' --build-arg CNI_PLUGINS=cni-plugins' : ''} -f ${join(r.outDir, 'Dockerfile.windows')} -t ${image} --push ${r.outDir}\n\n` +
          `Then name it in your overlay's kustomization.yaml:\n` +
          `images:\n  - name: flanneld-windows\n    newName: ${name}\n    newTag: "${tag}"\n`,
      );
    },
    (err) => {
      process.stderr.write(`image-context: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
