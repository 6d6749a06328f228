// The readiness check's fix for a missing plugin, applied as an operator would: the command between the
// backticks of `fix` is run (the built CLI, in a build that pins the test's stand-in releases, served over
// HTTP by the test: test/support/pinned-build.ts), then the check runs again and must find nothing. For the
// dual-stack conflist that means sdnbridge.exe is installed by the fix, not only the flannel plugins.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkCniReadiness, type CniReadinessInput } from '../../src/cni/readiness.js';
import { renderCniConfig } from '../../src/cni/conflist.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { fakeReleases } from '../support/cni-releases.js';
import { pinnedBuild } from '../support/pinned-build.js';

let dir: string;
let server: Server;
let main: string;
const asked: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flanneld-readiness-fix-'));
  const files = new Map<string, Buffer>();
  server = createServer((req, res) => {
    asked.push(req.url ?? '');
    const body = files.get(req.url ?? '');
    res.writeHead(body ? 200 : 404).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const fakes = await fakeReleases(base);
  for (const r of [...fakes.releases, ...fakes.dualStack]) files.set(new URL(r.pin.url).pathname, r.data);
  main = pinnedBuild(join(dir, 'build'), { releases: fakes.releases.map((r) => r.pin), dualStack: fakes.dualStack.map((r) => r.pin) });
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

/** Run the fix's command (`flanneld ...` between backticks) with the test's build (asynchronously: the test serves its downloads). */
function applyFix(fix: string): Promise<{ status: number | null; output: string }> {
  const command = /`flanneld ([^`]+)`/.exec(fix);
  if (!command) throw new Error(`the fix names no flanneld command: ${fix}`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [main, ...command[1].split(/\s+/)], { env: { PATH: process.env['PATH'] ?? '' } });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    child.on('exit', (status) => resolve({ status, output }));
  });
}

describe('the fix for a missing CNI plugin, applied', () => {
  it('the dual-stack conflist on a node without plugins: the fix installs sdnbridge.exe and host-local.exe, and the check then passes', async () => {
    const confDir = join(dir, 'net.d');
    const binDir = join(dir, 'bin');
    mkdirSync(confDir);
    const netConf = parseNetConf(JSON.stringify({ Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'host-gw' } }));
    const conflist = renderCniConfig({
      netConf,
      subnetFile: join(dir, 'subnet.env'),
      dataDir: join(dir, 'flannel'),
      serviceCidr: '10.96.0.0/12',
      managementSubnet: '10.0.0.0/24',
      managementIP: '10.0.0.2',
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
      dualStack: { subnet: '10.244.5.0/24', ipv6Subnet: 'fd00:10:244:5::/64' },
    });
    writeFileSync(join(confDir, '10-flannel.conflist'), JSON.stringify(conflist));
    const input: CniReadinessInput = { cniConfDir: confDir, cniBinDir: binDir, networkName: 'cbr0', subnetFile: join(dir, 'subnet.env') };

    const [problem, ...rest] = checkCniReadiness(input);
    expect(rest).toEqual([]);
    expect(problem.check).toBe('cni-plugin-missing');
    expect(problem.detail).toContain('sdnbridge');
    const applied = await applyFix(problem.fix);
    expect([applied.status, applied.output]).toEqual([0, expect.stringContaining('installed sdnbridge.exe')]);
    expect(asked.some((u) => u.endsWith('.zip'))).toBe(true); // the windows-container-networking release, downloaded
    expect(checkCniReadiness(input)).toEqual([]);
  });
});
