// The simulator's own cost, without the agent: N RemoteSubnetRoute policies added in batches of B through
// the simulated HNS transport (in memory, no modelled latency), then removed in batches of B; and N
// remote endpoints created then deleted. Prints the CPU time of each phase. Run it under
// `node --cpu-prof bench/sim-cost.mjs [N] [B] [policies|endpoints]` to see where the time goes (docs/performance.md).
import { SimulatedHnsTransport } from '../dist/simulator/hns.js';
import { SimulatedDataplane } from '../dist/simulator/model.js';

const N = Number(process.argv[2] ?? 5000);
const B = Number(process.argv[3] ?? 200);
/** `policies`, `endpoints` or both (default). */
const ONLY = process.argv[4];

const sim = new SimulatedDataplane({ nodeIP: '10.0.0.2' });
const hns = new SimulatedHnsTransport(sim);
const overlay = { Name: 'flannel.4096', Type: 'Overlay', Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.7.0/24' }] }] };
const net = await hns.createNetwork('', JSON.stringify(overlay));

/** Peer i's three leading octets (distinct for i < 2^20). */
const peer = (i) => `${10 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
const policy = (i) => ({
  Type: 'RemoteSubnetRoute',
  Settings: {
    DestinationPrefix: `${peer(i)}.0/24`,
    IsolationId: 4096,
    ProviderAddress: `172.${16 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`,
    DistributedRouterMacAddress: `00-11-22-${((i >> 16) & 255).toString(16).padStart(2, '0')}-${((i >> 8) & 255).toString(16).padStart(2, '0')}-${(i & 255).toString(16).padStart(2, '0')}`,
  },
});
const modify = (requestType, from) =>
  hns.modifyNetwork(
    net,
    JSON.stringify({ ResourceType: 'Policy', RequestType: requestType, Settings: { Policies: Array.from({ length: Math.min(B, N - from) }, (_, k) => policy(from + k)) } }),
  );

/** Each phase's CPU time (user + system: less disturbed than wall time by other work on the machine). */
async function phase(name, fn) {
  const t = process.cpuUsage();
  await fn();
  const d = process.cpuUsage(t);
  const ms = (d.user + d.system) / 1000;
  console.log(`${name}: ${ms.toFixed(0)} ms CPU (${((ms * 1000) / N).toFixed(1)} us per item)`);
}

if (ONLY !== 'endpoints') {
  await phase(`add ${N} policies, ${B} per call`, async () => {
    for (let i = 0; i < N; i += B) await modify('Add', i);
  });
  await phase(`remove ${N} policies, ${B} per call`, async () => {
    for (let i = 0; i < N; i += B) await modify('Remove', i);
  });
}
if (ONLY !== 'policies') {
  const ids = [];
  await phase(`create ${N} remote endpoints`, async () => {
    for (let i = 0; i < N; i++) {
      const ep = { Name: `ep-${i}`, Flags: 1, IpConfigurations: [{ IpAddress: `${peer(i)}.2`, PrefixLength: 24 }] };
      const h = await hns.createEndpoint(net, '', JSON.stringify(ep));
      ids.push(h.id);
      await hns.closeEndpoint(h);
    }
  });
  await phase(`delete ${N} endpoints`, async () => {
    for (const id of ids) await hns.deleteEndpoint(id);
  });
}
