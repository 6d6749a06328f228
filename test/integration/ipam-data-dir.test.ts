// An unwritable --cni-ipam-data-dir (a file in its place, or a read-only directory): host-local's store
// is where the agent reserves the host endpoint's `.2` and the source VIP (src/backends/ipam-reservation.ts),
// a safety net, so the agent warns with the path and the fix and runs on (the peers' routes and policies
// matter more); it never stops after the HNS network exists with a raw ENOTDIR.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, VXLAN_NET_CONF, WIN_IP, TestCluster } from '../support/cluster.js';

const WIN = 'win-1';
let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
  cluster.api.addNode(bareNode({ name: WIN, podCIDR: '10.244.7.0/24', internalIP: WIN_IP }));
});
afterEach(() => cluster.stop());

describe('an unwritable --cni-ipam-data-dir', () => {
  it.each([
    ['host-gw', HOSTGW_NET_CONF],
    ['vxlan', VXLAN_NET_CONF],
  ] as const)('%s: a file where the directory should be: a warning naming the path and the fix; the agent runs on', async (backend, netConf) => {
    // A peer of the node's own backend (one of another it rejects, and is then not ready).
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.101', backendType: backend }));
    const dir = join(cluster.dir, WIN);
    mkdirSync(dir, { recursive: true });
    const notADir = join(dir, 'cni-networks');
    writeFileSync(notADir, 'a file, not a directory\n');
    const args = [`--iface=${WIN_IP}`, `--cni-ipam-data-dir=${notADir}`];
    if (backend === 'vxlan') args.push(`--source-vip-file=${join(dir, 'sourcevip.json')}`, '--source-vip-compat-files=none');
    const agent = await cluster.startProcess({ nodeName: WIN, netConf, args });
    await agent.waitReady();
    const warn = await agent.waitForLog('cannot write the reservation in host-local');
    expect(warn).toMatchObject({ level: 'warn', dataDir: notADir });
    expect(String(warn['fix'])).toContain('--cni-ipam-data-dir');
  });
});
