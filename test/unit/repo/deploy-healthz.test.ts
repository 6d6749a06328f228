// The DaemonSet's health port (/healthz, /readyz, /metrics, /status) listens on the node IP (the kubelet
// probes a hostNetwork pod there) or on loopback, never on every address of the node.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

function manifests(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return manifests(p);
    return /\.ya?ml$/.test(n) ? [p] : [];
  });
}

describe('deploy/: the health port binding', () => {
  it('every --healthz-ip names the node IP or loopback', () => {
    const binds = manifests('deploy').flatMap((f) => [...readFileSync(f, 'utf8').matchAll(/--healthz-ip[= ]+(\S+)/g)].map((m) => ({ f, ip: m[1].replace(/;$/, '') })));
    expect(binds.length).toBeGreaterThan(0);
    for (const b of binds) expect([b.f, b.ip]).toEqual([b.f, expect.stringMatching(/^(\$env:NODE_IP|127\.0\.0\.1)$/)]);
  });
});
