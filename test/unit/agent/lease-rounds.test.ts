// The lease rounds (src/agent/lease-rounds.ts) at a first start, while the lease is held: the network is
// built and run while the Node list pages, but nothing other programs read is published until the first
// complete list confirms the podCIDR (src/subnet/lease.ts confirmLease; upstream waits for its node
// informer's sync before AcquireLease, flannel pkg/subnet/kube/kube.go). A vxlan network rebuilt in that
// window with another DR MAC republishes its backend data (src/backends/vxlan/backend.ts rebuild, as
// hcsshim's DrMacAddress policy is only a request): that republish must wait too, and the confirmation
// publishes the new VtepMAC. Everything is real but the wiring: the kube subnet manager over HTTP against
// the fake API server (src/demo/kube-fake/, its first Node list held open), the vxlan backend on the
// simulated node, subnet.env in a temporary directory. The source VIP files kube-proxy's scripts read
// (src/backends/vxlan/source-vip.ts) are held with subnet.env.
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LeaseRounds } from '../../../src/agent/lease-rounds.js';
import { SubnetEnvFile } from '../../../src/agent/subnet-env-file.js';
import type { Network } from '../../../src/backends/backend.js';
import { VxlanBackend } from '../../../src/backends/vxlan/backend.js';
import { systemClock } from '../../../src/basics/clock.js';
import { hostFiles } from '../../../src/basics/fs.js';
import { Metrics } from '../../../src/basics/metrics.js';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../../src/demo/kube-fake/api-server.js';
import type { HcnNetwork } from '../../../src/hns/schema.js';
import { findInterfaceByIP } from '../../../src/host/select.js';
import { buildKubeConfig } from '../../../src/kube/client.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { simulatedSeams } from '../../../src/simulator/node.js';
import { KubeSubnetManager } from '../../../src/subnet/kube/manager.js';
import { parseNetConf } from '../../../src/subnet/net-conf.js';
import { logSink } from '../../support/log-sink.js';
import { removeNetwork } from '../../support/sim-dataplane.js';
import { parseSourceVipDocument } from '../../../src/backends/vxlan/source-vip.js';
import { waitFor } from '../../support/wait-for.js';

const WIN = 'win';
const WIN_IP = '10.0.0.2';
const CIDR = '10.244.9.0/24';
const P = 'flannel.alpha.coreos.com/';
const NETWORK = 'flannel.4096';

const drMacOf = (net: HcnNetwork | undefined): string | undefined =>
  (net?.Policies?.find((p) => p.Type === 'DrMacAddress')?.Settings as { Address?: string } | undefined)?.Address?.replace(/-/g, ':').toLowerCase();

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** The own Node (podCIDR CIDR, never annotated) and a Linux peer, with the first Node list held open until the test lets it go. */
async function cluster(): Promise<{ api: FakeKubeApiServer; kubeconfig: string; dir: string }> {
  const api = new FakeKubeApiServer();
  await api.start();
  const dir = mkdtempSync(join(tmpdir(), 'lease-rounds-'));
  cleanup.push(
    () => api.stop(),
    () => rmSync(dir, { recursive: true, force: true }),
  );
  const kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, api.url);
  api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
  api.addNode(bareNode({ name: WIN, podCIDR: CIDR, internalIP: WIN_IP }));
  // The list (GET /api/v1/nodes, not the own Node's GET /api/v1/nodes/win) is never answered until unhang().
  api.hang('GET', /^\/api\/v1\/nodes$/, 'no-answer', 1);
  return { api, kubeconfig, dir };
}

/**
 * The lease rounds of a vxlan node on the simulated node, its first Node list held open (cluster()); with
 * `sourceVip`, kube-proxy's source VIP is reserved and its files are kept in the temporary directory.
 */
async function start(opts: { sourceVip?: boolean } = {}) {
  const { api, kubeconfig, dir } = await cluster();
  const { log, entries } = logSink();
  const metrics = new Metrics();
  const clock = systemClock;
  const netConf = parseNetConf(JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } }));
  const subnetManager = new KubeSubnetManager({
    kubeConfig: buildKubeConfig({ kubeconfigFile: kubeconfig, kubeApiUrl: '' }),
    nodeName: WIN,
    network: netConf.network,
    annotationPrefix: P,
    setNodeNetworkUnavailable: true,
    log,
    metrics,
    clock,
    timings: { backoffBaseMs: 10, backoffCapMs: 100, relistBackoff: { initialMs: 10, capMs: 100 } },
  });
  const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
  const dataplane = simulatedSeams(sim, { log, metrics, clock, hnsCallTimeoutMs: 10_000 });
  const extIface = findInterfaceByIP(await dataplane.host.interfaces(), WIN_IP)!;
  const subnetFile = join(dir, 'subnet.env');
  const sourceVipFiles = [join(dir, 'sourcevip.json'), join(dir, 'k', 'sourceVip.json')];
  const sourceVip = opts.sourceVip
    ? { flags: { sourceVipFile: sourceVipFiles[0], sourceVipCompatFiles: sourceVipFiles.slice(1), cniIpamDataDir: join(dir, 'cni') }, files: hostFiles }
    : {};
  const published: Network[] = [];
  const rounds = new LeaseRounds({
    subnetManager,
    backend: () => Promise.resolve(new VxlanBackend({ netConf, subnetManager, ...dataplane, extIface, publicIP: WIN_IP, log, metrics, clock, resyncMs: 50, ...sourceVip })),
    settle: (network) => network.settle(),
    subnetEnv: new SubnetEnvFile({ path: subnetFile, ipMasq: false, netConf, clock, log }),
    publish: (network) => Promise.resolve(void published.push(network)),
    beforeCompleteLease: () => Promise.resolve(),
    ownNode: { leased: () => undefined, roundEnded: () => undefined },
    running: () => undefined,
    clock,
  });
  const run = new AbortController();
  const done = rounds.run(run.signal).catch((err: unknown) => err);
  cleanup.push(async () => {
    run.abort(new Error('test end'));
    await done;
  });
  // Held: the network is built and runs while the first Node list hangs.
  await waitFor(() => rounds.network !== undefined && api.hangingRequests === 1, 'the network registered, the list held open');
  return { api, sim, dataplane, rounds, entries, subnetFile, sourceVipFiles, published };
}

const annotationPatches = (api: FakeKubeApiServer) =>
  api.requests.filter((r) => r.method === 'PATCH' && (r.body as { metadata?: { annotations?: unknown } } | undefined)?.metadata?.annotations);
const flannelAnnotations = (api: FakeKubeApiServer) => Object.keys(api.getNode(WIN)?.metadata.annotations ?? {}).filter((k) => k.startsWith(P));

describe('the lease rounds while the lease is held', () => {
  it('a backend-data republish (a rebuilt vxlan network with another DR MAC) publishes nothing until the lease is confirmed, and the new VtepMAC after', async () => {
    const { api, sim, rounds, entries, subnetFile, published } = await start();
    const first = drMacOf(sim.snapshot().networks.find((n) => n.Name === NETWORK))!;
    expect(first).toBeDefined();

    // HNS loses the network and gives the rebuilt one another DR MAC (the DrMacAddress asked for ignored).
    const create = sim.createNetwork.bind(sim);
    sim.createNetwork = (op, settings, id) => create(op, { ...settings, Policies: (settings.Policies ?? []).filter((p) => p.Type !== 'DrMacAddress') }, id);
    expect(removeNetwork(sim, NETWORK)).toBe(true);
    await waitFor(() => entries.some((e) => e['message'] === 'HNS network rebuilt; reprogramming every peer'), 'the network rebuilt (its afterRebuild hook run)');
    const second = drMacOf(sim.snapshot().networks.find((n) => n.Name === NETWORK))!;
    expect(second).not.toBe(first);
    expect(entries.some((e) => String(e['message']).startsWith('the recreated HNS network has another DR MAC'))).toBe(true);

    // Still held: no annotation patched, no subnet.env, nothing else published.
    expect({ patches: annotationPatches(api), annotations: flannelAnnotations(api), subnetEnv: existsSync(subnetFile), published: published.length, ready: rounds.ready }).toEqual({
      patches: [],
      annotations: [],
      subnetEnv: false,
      published: 0,
      ready: false,
    });

    // The list completes (the held one is cut and listed again): no other Node has the podCIDR, so the
    // lease is confirmed and what was held is published, the VtepMAC the republish gave included.
    api.unhang();
    await waitFor(() => rounds.ready || undefined, 'the lease confirmed and published');
    expect(annotationPatches(api)).toHaveLength(1);
    expect(api.getNode(WIN)?.metadata.annotations?.[`${P}backend-data`]).toBe(`{"VNI":4096,"VtepMAC":"${second}"}`);
    expect(api.getNode(WIN)?.metadata.annotations?.[`${P}public-ip`]).toBe(WIN_IP);
    expect(readFileSync(subnetFile, 'utf8')).toContain(`FLANNEL_SUBNET=10.244.9.1/24`);
    expect(published).toEqual([rounds.network]);
  });

  it("kube-proxy's source VIP is reserved while held, but the files its scripts read wait for the confirmation with subnet.env", async () => {
    const { api, dataplane, rounds, subnetFile, sourceVipFiles } = await start({ sourceVip: true });
    // The resync checks (VxlanBackend.lost: the endpoint, then the files) run twice while held.
    let checks = 0;
    const getEndpoint = dataplane.hns.getEndpoint.bind(dataplane.hns);
    dataplane.hns.getEndpoint = (id) => {
      if (id === rounds.network?.sourceVip?.endpointId) checks++;
      return getEndpoint(id);
    };
    await waitFor(() => checks >= 2 || undefined, 'two resync checks of the source VIP endpoint');
    const vip = rounds.network!.sourceVip!.ip;
    expect(vip).toBe('10.244.9.2');
    expect({ sourceVipFiles: sourceVipFiles.filter((f) => existsSync(f)), subnetEnv: existsSync(subnetFile), ready: rounds.ready }).toEqual({
      sourceVipFiles: [],
      subnetEnv: false,
      ready: false,
    });

    api.unhang();
    await waitFor(() => rounds.ready || undefined, 'the lease confirmed and published');
    expect(sourceVipFiles.map((f) => parseSourceVipDocument(readFileSync(f, 'utf8')))).toEqual([vip, vip]);
    expect(existsSync(subnetFile)).toBe(true);
  });
});
