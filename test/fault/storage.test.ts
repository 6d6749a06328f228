// The subnet.env directory and the dataplane state directory read-only or full. Running as root makes
// chmod ineffective, so EROFS / ENOSPC are injected at the file-system seams (the agent's subnet.env fs
// option, the simulated dataplane's fs option). A clear coded error, the old file intact.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataplaneStateError, SubnetEnvError } from '../../src/basics/errors.js';
import { METRIC } from '../../src/basics/metrics.js';
import { nodeSubnetEnvFs } from '../../src/basics/fs.js';
import type { SubnetEnvFs } from '../../src/basics/fs.js';
import { expectConverged, FaultCluster, HOSTGW_NET_CONF, VXLAN_NET_CONF, waitFor, WIN } from './harness.js';
import { readMetric } from '../support/agent-signals.js';
import { removeNetwork } from '../support/sim-dataplane.js';

let c: FaultCluster;
afterEach(async () => {
  await c?.stop();
});

function errno(code: string, syscall: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: injected, ${syscall} '${path}'`), { code, syscall, path });
}

const OLD = 'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.7.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n';
const NEW = 'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.100.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n';

function seedOldSubnetEnv(c: FaultCluster): string {
  const path = `${c.dir}/${WIN}/run/flannel/subnet.env`;
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, OLD);
  return path;
}

describe('subnet.env directory', () => {
  it('read-only: FLANNEL_ERR_SUBNET_ENV naming the path, old file intact; writable again -> rewritten, converged', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const path = seedOldSubnetEnv(c);
    const readOnly: SubnetEnvFs = {
      ...nodeSubnetEnvFs,
      open: async (p) => {
        throw errno('EROFS', 'open', p);
      },
    };
    const a = c.startAgent({ netConf: VXLAN_NET_CONF, subnetEnvFs: readOnly });
    const err = await a.outcome;
    expect(err).toBeInstanceOf(SubnetEnvError);
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_SUBNET_ENV', context: { path, errno: 'EROFS', stage: 'create temp file' } });
    expect(a.agent.isReady).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe(OLD);
    expect(readdirSync(dirname(path))).toEqual(['subnet.env']);

    const b = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(b, 'vxlan', [1]);
    expect(readFileSync(path, 'utf8')).toBe(NEW);
  });

  for (const stage of ['write', 'fsync'] as const) {
    it(`full (ENOSPC at ${stage}): coded error, old file intact, no temp file left`, async () => {
      c = await new FaultCluster().start();
      c.addWindowsNode();
      c.addLinux(2, 'vxlan');
      const path = seedOldSubnetEnv(c);
      const full: SubnetEnvFs = {
        ...nodeSubnetEnvFs,
        open: async (p, flags, mode) => {
          const fh = await nodeSubnetEnvFs.open(p, flags, mode);
          return {
            writeFile: async (data: string, enc: 'utf8') => {
              if (stage === 'write') {
                await fh.writeFile(data.slice(0, 10), enc); // a torn temp file
                throw errno('ENOSPC', 'write', p);
              }
              await fh.writeFile(data, enc);
            },
            sync: async () => {
              if (stage === 'fsync') throw errno('ENOSPC', 'fsync', p);
              await fh.sync();
            },
            close: () => fh.close(),
          };
        },
      };
      const a = c.startAgent({ netConf: VXLAN_NET_CONF, subnetEnvFs: full });
      expect(await a.outcome).toMatchObject({ code: 'FLANNEL_ERR_SUBNET_ENV', context: { path, errno: 'ENOSPC', stage } });
      expect(readFileSync(path, 'utf8')).toBe(OLD);
      expect(readdirSync(dirname(path))).toEqual(['subnet.env']);

      const b = c.startAgent({ netConf: VXLAN_NET_CONF });
      await expectConverged(b, 'vxlan', [2]);
      expect(readFileSync(path, 'utf8')).toBe(NEW);
    });
  }
});

describe('dataplane state directory', () => {
  it('read-only before the network exists: the agent stops with FLANNEL_ERR_DATAPLANE_STATE, old file intact', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'host-gw');
    c.addWindowsNode();
    // A fresh node's state file exists (written before the directory went read-only).
    const a = c.startAgent({ netConf: HOSTGW_NET_CONF, before: (_sim, st) => (st.mode = 'erofs') });
    const err = await a.outcome;
    expect(err).toBeInstanceOf(DataplaneStateError);
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_DATAPLANE_STATE', context: { file: a.statePath } });
    const disk = JSON.parse(readFileSync(a.statePath, 'utf8')) as { networks: unknown[] };
    expect(disk.networks).toEqual([]);
    // The model agrees with its file: the failed call changed nothing.
    expect(a.sim.snapshot()).toEqual(disk);

    const b = c.startAgent({ netConf: HOSTGW_NET_CONF });
    await expectConverged(b, 'host-gw', [1]);
  });

  for (const mode of ['erofs', 'enospc'] as const) {
    it(`${mode === 'erofs' ? 'read-only' : 'full'} while running: passes fail with a coded error and back off; file intact; then exact on disk too`, async () => {
      c = await new FaultCluster().start();
      c.addLinux(1, 'vxlan');
      c.addWindowsNode();
      const a = c.startAgent({ netConf: VXLAN_NET_CONF });
      await expectConverged(a, 'vxlan', [1]);
      const before = readFileSync(a.statePath, 'utf8');
      a.state.mode = mode;
      c.addLinux(2, 'vxlan');
      c.api.deleteNode('linux-1');
      await waitFor(async () => (await readMetric(a.agent.metrics, METRIC.applyPasses, { result: 'error' })) >= 2, 'failed passes');
      expect(readFileSync(a.statePath, 'utf8')).toBe(before);
      expect(a.sim.snapshot()).toEqual(JSON.parse(before)); // the failed calls changed nothing
      expect(a.agent.phase).toBe('running');

      a.state.mode = 'ok';
      await expectConverged(a, 'vxlan', [2]);
      // What a restart would see is what the agent programmed.
      await waitFor(() => JSON.stringify(JSON.parse(readFileSync(a.statePath, 'utf8'))) === JSON.stringify(a.sim.snapshot()), 'state file caught up');
    });
  }
});

// The network rebuilt with another MTU (the adapter's MTU changed: jumbo frames enabled) while the
// subnet.env directory is read-only: the rebuild itself stands, and what subnet.env must hold (the new
// MTU) is written once the directory is writable again, retried until then.
describe('subnet.env after a rebuild with a new MTU', () => {
  it('read-only at the rebuild: retried until written, with the new MTU', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    // The directory turns read-only after the first write, and writable again later.
    let readOnly = false;
    let refused = 0;
    const switchable: SubnetEnvFs = {
      ...nodeSubnetEnvFs,
      open: async (p, ...rest) => {
        if (!readOnly) return nodeSubnetEnvFs.open(p, ...rest);
        refused++;
        throw errno('EROFS', 'open', p);
      },
    };
    const a = c.startAgent({ netConf: VXLAN_NET_CONF, subnetEnvFs: switchable });
    await expectConverged(a, 'vxlan', [1]);
    expect(readFileSync(a.subnetFile, 'utf8')).toContain('FLANNEL_MTU=1450');
    readOnly = true;
    a.sim.store.update((s) => {
      for (const ad of s.adapters) ad.Mtu = 9000;
    });
    expect(removeNetwork(a.sim, 'flannel.4096')).toBe(true);
    await waitFor(() => refused >= 2 || undefined, 'the subnet.env write refused, then tried again', 20_000);
    expect(readFileSync(a.subnetFile, 'utf8')).toContain('FLANNEL_MTU=1450');
    readOnly = false;
    await waitFor(() => readFileSync(a.subnetFile, 'utf8').includes('FLANNEL_MTU=8950') || undefined, 'subnet.env rewritten with the new MTU', 20_000);
    await expectConverged(a, 'vxlan', [1]);
  });
});
