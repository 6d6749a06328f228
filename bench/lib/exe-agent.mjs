// flanneld.exe (npm run package:windows) under Wine, as bench/lib/cli-agent.mjs runs dist/main.js: kube
// mode on the simulated dataplane against a fake API server. Wine gives no IPC probe, so memory is the
// resident set of the Wine process running flanneld.exe (/proc/<pid>/status VmRSS), after the agent has
// idled `settleMs` (its 10 s resync runs meanwhile). Output goes to files: Node under Wine dies on pipes.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { HOSTGW_NET_CONF, OWN_IP, OWN_NODE, VXLAN_NET_CONF, makeTmpDir, sleep } from './common.mjs';

const winPath = (p) => 'Z:' + resolve(p).replace(/\//g, '\\');

export function wineEnv(extra = {}) {
  return { ...process.env, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=', NODE_SKIP_PLATFORM_CHECK: '1', ...extra };
}

/**
 * The resident set of the Wine process whose command line starts with `exe` (wine re-executes itself
 * through its preloader, so it is not the pid spawn() returned); `kill` ends that process instead.
 */
export function wineProcessRss(exe, kill = false) {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    let cmd;
    try {
      cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
    } catch {
      continue; // gone
    }
    if (!cmd.startsWith(exe)) continue;
    if (kill) {
      process.kill(Number(d), 'SIGKILL');
      return undefined;
    }
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${d}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  }
  return undefined;
}

export async function runExeAgent({ exeDir, kubeconfig, backend = 'vxlan', peers, wineprefix, settleMs = 15_000, timeoutMs = 300_000 }) {
  const dir = makeTmpDir();
  const netConf = join(dir, 'net-conf.json');
  writeFileSync(netConf, JSON.stringify(backend === 'vxlan' ? VXLAN_NET_CONF : HOSTGW_NET_CONF));
  const errFile = join(dir, 'flanneld.err');
  const out = openSync(join(dir, 'flanneld.out'), 'w');
  const err = openSync(errFile, 'w');
  const exe = join(exeDir, 'flanneld.exe');
  const args = [
    '--kube-subnet-mgr',
    `--kubeconfig-file=${winPath(kubeconfig)}`,
    `--net-config-path=${winPath(netConf)}`,
    `--subnet-file=${winPath(join(dir, 'subnet.env'))}`,
    '--dataplane',
    'simulated',
    '--iface',
    OWN_IP,
    '--log-format=json',
  ];
  const env = wineEnv({ NODE_NAME: OWN_NODE, ...(wineprefix ? { WINEPREFIX: wineprefix } : {}) });
  const child = spawn('wine', [exe, ...args], { env, stdio: ['ignore', out, err] });
  closeSync(out);
  closeSync(err);
  let exitCode;
  child.on('exit', (c) => (exitCode = c));
  try {
    const deadline = Date.now() + timeoutMs;
    const synced = () =>
      readFileSync(errFile, 'utf8')
        .split('\n')
        .some((l) => l.includes('"first reconcile pass done"') && l.includes(`"peers":${peers}`) && l.includes('"ok":true'));
    while (!synced()) {
      if (exitCode !== undefined) throw new Error(`flanneld.exe exited ${exitCode}:\n${readFileSync(errFile, 'utf8').slice(-3000)}`);
      if (Date.now() > deadline) throw new Error(`flanneld.exe did not sync ${peers} peers:\n${readFileSync(errFile, 'utf8').slice(-3000)}`);
      await sleep(200);
    }
    await sleep(settleMs);
    const rss = wineProcessRss(exe);
    if (rss === undefined) throw new Error('no process runs flanneld.exe');
    return { rss };
  } finally {
    child.kill('SIGINT');
    await Promise.race([new Promise((r) => child.once('exit', r)), sleep(10_000)]);
    if (exitCode === undefined) child.kill('SIGKILL');
    wineProcessRss(exe, true);
    rmSync(dir, { recursive: true, force: true });
  }
}
