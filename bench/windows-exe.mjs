// Benchmark 7 (optional: `node bench/run.mjs --only=windows-exe --exe-dir=DIR`, DIR holding the unzipped
// output of `npm run package:windows`): the resident memory of flanneld.exe under Wine with zero peers
// and with 1,000, against the same run's baseline of the bare node.exe it is built from, idle under the
// same Wine. Wine's own DLLs and heap are in both figures, so the difference is what the agent adds;
// the absolute numbers are Wine's, not Windows'.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runExeAgent, wineEnv, wineProcessRss } from './lib/exe-agent.mjs';
import { ApiServerProcess, BENCH_DIR, log, makeTmpDir, mb, sleep, table } from './lib/common.mjs';

const CACHE = join(BENCH_DIR, '..', 'node_modules', '.cache', 'flanneld-windows');

/** The bare node.exe the package was built from (packaging/build.mjs caches it), idle for `settleMs`. */
async function bareNode(nodeExe, wineprefix, settleMs) {
  const child = spawn('wine', [nodeExe, '-e', 'setInterval(() => {}, 1000)'], { env: wineEnv({ WINEPREFIX: wineprefix }), stdio: 'ignore' });
  try {
    await sleep(settleMs);
    return { rss: wineProcessRss(nodeExe) };
  } finally {
    child.kill('SIGKILL');
    await sleep(500);
    wineProcessRss(nodeExe, true);
  }
}

export async function run({ exeDir }) {
  if (!exeDir || !existsSync(join(exeDir, 'flanneld.exe'))) throw new Error('windows-exe needs --exe-dir=DIR holding flanneld.exe (unzip dist/flanneld-windows-amd64.zip)');
  const wineprefix = join(CACHE, 'wineprefix');
  const nodeDir = join(CACHE, 'node');
  const nodeExe = readdirSync(nodeDir)
    .filter((f) => /^node-.*\.exe$/.test(f))
    .map((f) => join(nodeDir, f))[0];
  const settleMs = 15_000;
  const rows = [];
  if (nodeExe) {
    log(`windows-exe: bare ${nodeExe}`);
    const bare = await bareNode(nodeExe, wineprefix, settleMs);
    rows.push({ process: 'node.exe -e "setInterval(...)" (baseline)', peers: '-', rssMB: mb(bare.rss) });
  }
  for (const peers of [0, 1000]) {
    log(`windows-exe: flanneld.exe, ${peers} peers`);
    const api = await new ApiServerProcess().setup(makeTmpDir(), { peers, backend: 'vxlan' });
    try {
      const r = await runExeAgent({ exeDir, kubeconfig: api.kubeconfig, peers, wineprefix, settleMs });
      rows.push({ process: 'flanneld.exe (kube mode, simulated dataplane)', peers, rssMB: mb(r.rss) });
    } finally {
      await api.close();
    }
  }
  table(`flanneld.exe under Wine (${readFileSync('/proc/version', 'utf8').split(' ')[2]}; RSS ${settleMs / 1000} s after sync)`, rows);
  return { rows, notes: ['RSS of the Wine process that runs the exe (/proc/<pid>/status), after the agent logged that the dataplane holds every peer and idled.'] };
}
