// The files of a repository folder that git tracks (`git ls-files`), for what the release zip ships from
// scripts/ and deploy/: an operator's untracked overlay (deploy/overlays/my-cluster, with their API
// server and registry) or an editor's backup file must never end up in a published package. The image
// context is made from that zip (packaging/image-context.mjs), so it holds the same files.
import { execFileSync } from 'node:child_process';
import { join, relative, sep } from 'node:path';

/**
 * Absolute paths of the tracked files under `dir` (inside the git work tree `repo`), sorted. Throws
 * when `repo` is no git work tree: a package built from an unknown tree could ship anything.
 */
export function trackedFiles(repo, dir) {
  const rel = relative(repo, dir).split(sep).join('/');
  let out;
  try {
    out = execFileSync('git', ['-C', repo, 'ls-files', '-z', '--cached', '--', rel || '.'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    throw new Error(`cannot list the git-tracked files of ${dir} (${err instanceof Error ? err.message.split('\n')[0] : String(err)}): package from a git checkout`);
  }
  return out
    .split('\0')
    .filter((f) => f !== '')
    .sort()
    .map((f) => join(repo, ...f.split('/')));
}

/** Zip entries (`<prefix>/<path>`) that name no tracked file of `repo`: what image-context refuses. */
export function untrackedEntries(repo, names, prefixes) {
  const tracked = new Set();
  for (const p of prefixes) for (const f of trackedFiles(repo, join(repo, p))) tracked.add(relative(repo, f).split(sep).join('/'));
  return names.filter((n) => prefixes.some((p) => n.startsWith(`${p}/`)) && !tracked.has(n));
}
