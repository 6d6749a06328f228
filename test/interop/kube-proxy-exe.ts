// The kube-proxy.exe the kube-proxy live tier runs (./kube-proxy.test.ts), named by FLANNEL_KUBE_PROXY_EXE
// and hash-checked as ./plugins.ts checks the CNI plugins. The binary cannot be distributed with this
// project (nor fetched or built here), so the tier runs only when one is supplied.
//
// A file is accepted when its SHA-256 is
//  * in KUBE_PROXY_PINS, each pin an official release's kube-proxy.exe (dl.k8s.io/release/<version>/bin/
//    windows/amd64/kube-proxy.exe) with the hash its `.sha256` page publishes beside it; or
//  * the one the `kube-proxy.exe.sha256` beside it holds (dl.k8s.io's file, downloaded with the exe: the bare
//    hex hash, or `sha256sum` format).
// KUBE_PROXY_PINS is empty: no release's `.sha256` page could be read from where this tier was written
// (only the npm and Debian registries are reachable), and a hash is never written down without its source.
// Add one as `{ version, sha256, source: 'https://dl.k8s.io/release/<version>/bin/windows/amd64/kube-proxy.exe.sha256' }`.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';

/** The variable that names the kube-proxy.exe. */
export const KUBE_PROXY_EXE_VARIABLE = 'FLANNEL_KUBE_PROXY_EXE';

export interface KubeProxyPin {
  version: string;
  sha256: string;
  /** The page that publishes the hash. */
  source: string;
}

export const KUBE_PROXY_PINS: readonly KubeProxyPin[] = [];

/** What FLANNEL_KUBE_PROXY_EXE names: nothing (skip), a file whose hash checks out, or why it cannot run. */
export type KubeProxyExe = { kind: 'unset'; reason: string } | { kind: 'checked'; exe: string; sha256: string; by: string } | { kind: 'refused'; reason: string };

/** A `.sha256` file's hash: the bare hex dl.k8s.io serves, or the first `sha256sum` line. */
export function parseSha256File(text: string): string | undefined {
  const m = /^\s*([0-9a-fA-F]{64})(?:\s|$)/.exec(text);
  return m ? m[1].toLowerCase() : undefined;
}

/**
 * Judge a file by its bytes: accepted when its SHA-256 is pinned or equals the sidecar's (`sidecar`: the text of
 * the `.sha256` beside it, undefined when there is none); refused otherwise, saying why.
 */
export function judgeKubeProxyExe(exe: string, bytes: Buffer, sidecar: string | undefined, pins: readonly KubeProxyPin[] = KUBE_PROXY_PINS): KubeProxyExe {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const pin = pins.find((p) => p.sha256.toLowerCase() === sha256);
  if (pin) return { kind: 'checked', exe, sha256, by: `the pin of kube-proxy ${pin.version} (${pin.source})` };
  if (sidecar === undefined) {
    return {
      kind: 'refused',
      reason: `${exe} (sha256 ${sha256}) matches no pinned kube-proxy release and has no ${exe}.sha256 beside it: download the .sha256 from dl.k8s.io with the exe`,
    };
  }
  const listed = parseSha256File(sidecar);
  if (listed === undefined) return { kind: 'refused', reason: `${exe}.sha256 holds no SHA-256 (expected the 64 hex digits dl.k8s.io serves)` };
  if (listed !== sha256) return { kind: 'refused', reason: `${exe} does not match ${exe}.sha256 (sha256 ${sha256}, listed ${listed})` };
  return { kind: 'checked', exe, sha256, by: `${exe}.sha256` };
}

/** Read FLANNEL_KUBE_PROXY_EXE (sync: it decides at load time whether the tier's tests are defined). */
export function kubeProxyExe(env: NodeJS.ProcessEnv = process.env): KubeProxyExe {
  const exe = env[KUBE_PROXY_EXE_VARIABLE];
  if (!exe) {
    return {
      kind: 'unset',
      reason: `kube-proxy live tier skipped: ${KUBE_PROXY_EXE_VARIABLE} is not set (a kube-proxy.exe for windows/amd64, pinned or with its .sha256 beside it; docs/testing.md "The kube-proxy live tier")`,
    };
  }
  if (!existsSync(exe)) return { kind: 'refused', reason: `${KUBE_PROXY_EXE_VARIABLE}=${exe}: no such file` };
  const sidecar = `${exe}.sha256`;
  return judgeKubeProxyExe(exe, readFileSync(exe), existsSync(sidecar) ? readFileSync(sidecar, 'utf8') : undefined);
}
