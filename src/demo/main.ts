// `npm start`: the agent against an in-process cluster on the simulated dataplane. A fake Kubernetes
// API server (real HTTP, real client-node) holds a few Linux flannel nodes and one Windows node; the
// agent leases the Windows node's podCIDR, writes subnet.env and programs the peers; every few seconds
// a node joins or leaves so the reconcile can be watched. Ctrl-C stops.
//   npm start -- [--backend vxlan|host-gw] [--log-level warn|info|debug] [--interval SECONDS]
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '../agent.js';
import { pause, systemClock } from '../basics/clock.js';
import { parseConfig } from '../config/parse.js';
import { errorMessage } from '../basics/errors.js';
import { METRIC, Metrics } from '../basics/metrics.js';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from './kube-fake/api-server.js';
import { createLogger } from '../basics/log.js';
import { createSimulatedNode } from '../simulator/node.js';
import { peerTable, renderTable } from './peer-table.js';
import { DEFAULT_VXLAN_PORT } from '../subnet/net-conf-types.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

const backend = arg('backend', 'vxlan') === 'host-gw' ? 'host-gw' : 'vxlan';
const logLevel = arg('log-level', 'warn');
const intervalMs = Math.max(1, Number(arg('interval', '8'))) * 1000;
const WINDOWS_NODE = 'win-node-1';
const WINDOWS_IP = '10.0.0.2';

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'flanneld-demo-'));
  const api = new FakeKubeApiServer();
  await api.start();

  let next = 1;
  const addLinux = () => {
    const n = next++;
    api.addNode(linuxFlannelNode({ name: `linux-node-${n}`, podCIDR: `10.244.${n}.0/24`, publicIP: `10.0.0.${10 + n}`, backendType: backend }));
  };
  for (let i = 0; i < 3; i++) addLinux();
  // A Linux node still on Linux flanneld's default VNI 1: Windows cannot reach it, so the agent rejects it.
  if (backend === 'vxlan') api.addNode(linuxFlannelNode({ name: 'linux-vni1', podCIDR: '10.244.50.0/24', publicIP: '10.0.0.50', backendType: 'vxlan', vni: 1 }));
  api.addNode({ ...bareNode({ name: WINDOWS_NODE, podCIDR: '10.244.100.0/24', internalIP: WINDOWS_IP }) });

  const netConf =
    backend === 'vxlan'
      ? { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: DEFAULT_VXLAN_PORT } }
      : { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } };
  writeFileSync(join(dir, 'net-conf.json'), JSON.stringify(netConf, null, 2));
  await writeKubeconfig(join(dir, 'kubeconfig'), api.url);

  const parsed = parseConfig(
    [
      '--kube-subnet-mgr',
      `--kubeconfig-file=${join(dir, 'kubeconfig')}`,
      `--net-config-path=${join(dir, 'net-conf.json')}`,
      `--subnet-file=${join(dir, 'run', 'flannel', 'subnet.env')}`,
      '--dataplane=simulated',
      `--dataplane-state=${join(dir, 'dataplane.json')}`,
      `--iface=${WINDOWS_IP}`,
      '--ip-masq',
      `--log-level=${logLevel}`,
    ],
    { NODE_NAME: WINDOWS_NODE },
    { platform: process.platform },
  );
  if (parsed.kind !== 'run') throw new Error('demo config did not parse to a run command');
  const config = parsed.config;
  const log = createLogger({ level: config.logLevel });
  const clock = systemClock;
  // The demo builds the simulated node itself, to show what the model holds; the agent gets its seams.
  const metrics = new Metrics();
  const node = createSimulatedNode(config, { log, metrics, clock });
  const agent = new Agent({ config, log, clock, metrics, dataplane: node.dataplane, resyncMs: 2000 });
  const controller = new AbortController();
  process.on('SIGINT', () => controller.abort(new Error('SIGINT')));
  process.on('SIGTERM', () => controller.abort(new Error('SIGTERM')));

  const out = (s: string) => process.stdout.write(s + '\n');
  out(`flanneld-windows demo: ${backend} backend, fake API server at ${api.url}, work dir ${dir}`);
  const running = agent.run(controller.signal);

  const show = (title: string) => {
    const rows = peerTable(node.model, agent.network, api.listNodes());
    out(`\n${title}\n${renderTable(rows)}`);
  };

  // Wait for the first in-sync pass, then show what was leased and programmed.
  while (!agent.network && agent.phase !== 'stopped' && (await pause(clock, 50, controller.signal)));
  if (agent.network) {
    while (!agent.network.status().inSync && agent.phase !== 'stopped' && (await pause(clock, 50, controller.signal)));
    const lease = agent.network.lease;
    out(`\nleased ${lease.subnet} for node ${WINDOWS_NODE} (public IP ${lease.publicIP}), HNS network ${agent.network.networkName}, MTU ${agent.network.mtu}`);
    out(`\n${config.subnetFile}:\n${readFileSync(config.subnetFile, 'utf8')}`);
    show('programmed peers:');
    const counted = await agent.metrics.registry.getSingleMetric(METRIC.leasesRejected)?.get();
    const rejected = (counted?.values ?? []).reduce((sum, v) => sum + v.value, 0);
    if (rejected > 0) out(`  (${rejected} peer lease${rejected === 1 ? '' : 's'} rejected: see the warning above and flannel_leases_rejected_total)`);
    out(`\nEvery ${intervalMs / 1000} s a node joins or leaves; press Ctrl-C to stop.`);
  }

  // Every interval a node joins or leaves; the table is shown a second later, once the agent caught up.
  const churn = async () => {
    let wait = intervalMs;
    for (let step = 1; await pause(clock, wait, controller.signal); step++) {
      const linux = api.listNodes().filter((n) => n.metadata.name.startsWith('linux-node-'));
      if (step % 2 === 1 || linux.length === 0) {
        addLinux();
        out(`\n+ node linux-node-${next - 1} joined`);
      } else {
        const victim = linux[0].metadata.name;
        api.deleteNode(victim);
        out(`\n- node ${victim} left`);
      }
      if (!(await pause(clock, 1000, controller.signal))) return;
      show('programmed peers:');
      wait = intervalMs - 1000;
    }
  };
  const churning = churn();

  try {
    await running;
  } finally {
    controller.abort(new Error('demo stopped'));
    await churning;
    await api.stop();
    out('\ndemo stopped');
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${errorMessage(err)}\n`);
  process.exitCode = 1;
});
