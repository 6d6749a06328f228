// A Network that cannot be right, refused by the whole agent before it touches HNS: one wider than /8
// (0.0.0.0/0 was taken: ready, FLANNEL_NETWORK=0.0.0.0/0, every peer rejected) and one holding the node's
// own address (`covers-node-address`; docs/compatibility.md §2).
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { NetConfError } from '../../src/basics/errors.js';
import { expectCode } from '../support/errors.js';
import { TestCluster, WIN_IP } from '../support/cluster.js';

const WIN = 'win-1';

let cluster: TestCluster;
afterEach(async () => {
  await cluster?.stop();
});

describe('the agent refuses a Network that cannot be right', () => {
  it.each([
    ['0.0.0.0/0', 'too-wide'],
    ['10.0.0.0/16', 'covers-node-address'],
    ['10.0.0.0/8', 'covers-node-address'],
  ])('Network %s: FLANNEL_ERR_NET_CONF (%s), never ready, no subnet.env, no HNS network', async (network, reason) => {
    cluster = await new TestCluster().start();
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: { Network: network, Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } } });
    const err = await expectCode(a.done, NetConfError, 'FLANNEL_ERR_NET_CONF');
    expect(err.context).toMatchObject({ key: 'Network', reason });
    expect(a.agent.isReady).toBe(false);
    expect(existsSync(a.subnetFile)).toBe(false);
    expect(a.sim.snapshot().networks ?? []).toEqual([]);
  });
});
