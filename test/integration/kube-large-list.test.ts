// A cluster larger than the old page bound (80 pages, 20,000 Nodes), over real HTTP against
// FakeKubeApiServer: 20,001 small Linux flannel Nodes list completely (134 pages of 150 with opaque
// continue tokens, as the apiserver pages in name order), so the agent becomes ready instead of relisting
// forever with FLANNEL_ERR_KUBE_LIST. (50,000 Nodes are listed in test/unit/subnet/kube/node-list-watch.test.ts,
// where the pages cost no HTTP.)
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { buildKubeConfig } from '../../src/kube/client.js';
import { DEFAULT_LIST_PAGE_SIZE, KubeSubnetManager } from '../../src/subnet/kube/manager.js';
import type { LeaseUpdate } from '../../src/subnet/lease.js';
import { waitFor } from '../support/cluster.js';
import { logSink } from '../support/log-sink.js';

const P = 'flannel.alpha.coreos.com/';
const NODES = 20_001;

let api: FakeKubeApiServer;
let dir: string;
beforeAll(async () => {
  api = new FakeKubeApiServer();
  await api.start();
  dir = await mkdtemp(join(tmpdir(), 'kube-large-'));
  await writeKubeconfig(join(dir, 'kubeconfig'), api.url);
  api.addNode(bareNode({ name: 'win', podCIDR: '10.0.0.0/24' }));
  for (let i = 1; i <= NODES; i++) {
    api.addNode(linuxFlannelNode({ name: `l${String(i).padStart(5, '0')}`, podCIDR: `10.${(i >> 8) & 255}.${i & 255}.0/24`, publicIP: '192.168.0.1', backendType: 'host-gw' }));
  }
});
afterAll(async () => {
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

describe(`${NODES} Nodes`, () => {
  it('one complete list, no list failure', async () => {
    const { log, entries } = logSink('info');
    const m = new KubeSubnetManager({
      kubeConfig: buildKubeConfig({ kubeconfigFile: join(dir, 'kubeconfig'), kubeApiUrl: '' }),
      nodeName: 'win',
      network: '10.0.0.0/8',
      annotationPrefix: P,
      setNodeNetworkUnavailable: true,
      log,
      timings: { watchTimeoutSeconds: 60 },
    });
    const ctrl = new AbortController();
    let listed: number | undefined;
    void m.watchLeases((u: LeaseUpdate) => {
      if (u.kind === 'listed') listed = u.keys.size;
    }, ctrl.signal);
    try {
      await waitFor(() => listed !== undefined || entries.some((e) => e['message'] === 'listing nodes failed, backing off') || undefined, 'the list', 60_000);
      expect(entries.filter((e) => e['message'] === 'listing nodes failed, backing off')).toEqual([]);
      expect(listed).toBe(NODES);
      expect(entries.find((e) => e['message'] === 'node list synced')).toMatchObject({ nodes: NODES + 1, pages: Math.ceil((NODES + 1) / DEFAULT_LIST_PAGE_SIZE) });
    } finally {
      ctrl.abort();
    }
  });
});
