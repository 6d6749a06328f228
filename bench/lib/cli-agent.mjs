// The agent as an operator runs it: `node dist/main.js` (the real CLI) in a child process on the
// simulated dataplane against a fake API server's kubeconfig, with bench/lib/mem-probe.mjs preloaded
// so the bench can ask it, over IPC, for its memory after full GCs, its CPU time and a CPU profile. The node runtime flags are those
// flanneld.exe ships with (packaging/runtime-flags.mjs) unless `execArgv` says otherwise.
import { fork } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RUNTIME_EXEC_ARGV } from '../../packaging/runtime-flags.mjs';
import { BENCH_DIR, HOSTGW_NET_CONF, OWN_IP, OWN_NODE, VXLAN_NET_CONF, makeTmpDir } from './common.mjs';

const MAIN = join(BENCH_DIR, '..', 'dist', 'main.js');

/** Start `flanneld` (kube mode, simulated dataplane); resolves once it logs that the dataplane holds `peers` peers. */
export async function startCliAgent({ kubeconfig, backend = 'vxlan', peers, execArgv = RUNTIME_EXEC_ARGV, timeoutMs = 600_000, profileFromStart = false }) {
  const dir = makeTmpDir();
  const netConf = join(dir, 'net-conf.json');
  writeFileSync(netConf, JSON.stringify(backend === 'vxlan' ? VXLAN_NET_CONF : HOSTGW_NET_CONF));
  mkdirSync(join(dir, 'run'), { recursive: true });
  const args = [
    '--kube-subnet-mgr',
    `--kubeconfig-file=${kubeconfig}`,
    `--net-config-path=${netConf}`,
    `--subnet-file=${join(dir, 'run', 'subnet.env')}`,
    '--dataplane=simulated',
    `--iface=${OWN_IP}`,
    '--log-format=json',
  ];
  const child = fork(MAIN, args, {
    execArgv: ['--expose-gc', '--import', join(BENCH_DIR, 'lib', 'mem-probe.mjs'), ...execArgv],
    env: { PATH: process.env.PATH ?? '', NODE_NAME: OWN_NODE, ...(profileFromStart ? { BENCH_PROFILE_FROM_START: '1' } : {}) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  const exited = new Promise((r) => child.once('exit', r));
  let tail = '';
  const inSync = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`flanneld did not sync ${peers} peers within ${timeoutMs} ms:\n${tail}`)), timeoutMs);
    let buf = '';
    child.stderr.on('data', (d) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop();
      for (const line of lines) {
        tail = (tail + line + '\n').slice(-4000);
        let rec;
        try {
          rec = JSON.parse(line);
        } catch {
          continue;
        }
        if (rec.message === 'first reconcile pass done' && rec.peers === peers && rec.ok === true) {
          clearTimeout(timer);
          resolve();
        }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`flanneld exited (${code}) before syncing:\n${tail}`));
    });
  });
  const ask = (probe, extra = {}) =>
    new Promise((resolve) => {
      const on = (m) => {
        if (m?.probe !== probe) return;
        child.off('message', on);
        resolve(m);
      };
      child.on('message', on);
      child.send({ probe, ...extra });
    });
  return {
    pid: child.pid,
    inSync,
    /** process.memoryUsage() after full GCs, in the agent's process. */
    memory: () => ask('memory'),
    /** CPU ms the agent's process has used so far. */
    cpuMs: async () => {
      const m = await ask('cpu');
      return (m.user + m.system) / 1000;
    },
    /** A CPU profile of the window between profileStart() and profileStop(file) (or from the start). */
    profileStart: () => ask('profile-start'),
    profileStop: (file) => ask('profile-stop', { file }),
    async stop() {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
