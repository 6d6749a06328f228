// The built CLI (dist/main.js) against a real HTTP API server that misbehaves in the ways measured before
// the list-watch loop had bounds (docs/architecture.md, "Bounds on the list and watch loop"; the fake API
// server's NodeMisbehaviour, src/demo/kube-fake/request-faults.ts): a watch always answering 410 Gone
// (5,000-10,000 LISTs in 15 s before), a watch closed after one event (10,000-25,000 watches in 15 s), a
// list repeating its `continue` token (paged forever, nothing logged, /readyz 200). The agent
// must pause between rounds as client-go's reflector does (src/basics/relist.ts). No wall-clock window is
// asserted: each test waits until the agent has logged N pauses, then asserts the server's request count
// against N (a round cannot start before the pause the previous round logged), so the ceiling holds
// however fast or slow the machine is; without the pauses the log line never comes and the test fails.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import type { NodeMisbehaviour } from '../../src/demo/kube-fake/api-server.js';
import { startFlanneld } from '../support/flanneld-process.js';
import type { FlanneldProcess } from '../support/flanneld-process.js';
import { freePort } from '../support/free-port.js';
import { waitFor } from '../support/wait-for.js';

type Entry = Record<string, unknown>;

describe('the built agent against a misbehaving API server: each round after a logged pause', () => {
  let api: FakeKubeApiServer;
  let dir: string;
  let agent: FlanneldProcess | undefined;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'polite-'));
    api = new FakeKubeApiServer();
    await api.start();
    writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');
    api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
    api.addNode(bareNode({ name: 'win-1', podCIDR: '10.244.7.0/24' }));
  });
  afterEach(async () => {
    if (agent) expect(await agent.stop()).toBe(0);
    agent = undefined;
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(mode: NodeMisbehaviour): Promise<{ port: number; subnetFile: string }> {
    api.misbehave(mode);
    const port = await freePort();
    const subnetFile = join(dir, 'subnet.env');
    agent = startFlanneld(
      [
        '--kube-subnet-mgr',
        `--kube-api-url=${api.url}`,
        `--net-config-path=${join(dir, 'net-conf.json')}`,
        `--subnet-file=${subnetFile}`,
        '--dataplane=simulated',
        '--iface=10.0.0.7',
        '--healthz-ip=127.0.0.1',
        `--healthz-port=${port}`,
        '--log-format=json',
      ],
      { NODE_NAME: 'win-1' },
      60_000,
    );
    return { port, subnetFile };
  }

  function logged(message: string): Entry[] {
    const out: Entry[] = [];
    for (const line of agent!.stderr().split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const e = JSON.parse(line) as Entry;
        if (e.message === message) out.push(e);
      } catch {
        // a line cut mid-write: the next read has it whole
      }
    }
    return out;
  }

  /** GET /api/v1/nodes requests so far: lists (with their pages) and watches. */
  function nodeRequests(): { lists: number; watches: number } {
    const reqs = api.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes');
    const watches = reqs.filter((r) => r.query.watch === 'true').length;
    return { lists: reqs.length - watches, watches };
  }

  /** Wait until `message` was logged `n` times with a pause (delayMs); read the requests, then the count. */
  async function afterPauses(message: string, n: number): Promise<{ lists: number; watches: number; pauses: Entry[] }> {
    await waitFor(() => logged(message).length >= n, `${n} x "${message}"`, { timeoutMs: 30_000, detail: () => agent!.stderr().slice(-2000) });
    const counts = nodeRequests();
    const pauses = logged(message);
    expect(pauses.every((e) => typeof e.delayMs === 'number' && e.delayMs >= 800)).toBe(true);
    return { ...counts, pauses };
  }

  const readyz = async (port: number): Promise<number | undefined> => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status;

  it('every watch answered 410 Gone: one list and one watch per logged pause', async () => {
    await start('watch-gone');
    const r = await afterPauses('node watch resourceVersion expired (410 Gone), backing off before relisting', 3);
    expect(r.lists).toBeGreaterThanOrEqual(3);
    expect(r.lists).toBeLessThanOrEqual(r.pauses.length + 1);
    expect(r.watches).toBeLessThanOrEqual(r.pauses.length + 1);
  }, 45_000);

  it('every watch closed after one event: one watch per logged pause, no relist', async () => {
    await start('watch-one-event');
    const r = await afterPauses('node watch closed early by the server, backing off', 3);
    expect(r.lists).toBe(1);
    expect(r.watches).toBeGreaterThanOrEqual(3);
    expect(r.watches).toBeLessThanOrEqual(r.pauses.length + 1);
  }, 45_000);

  it('a list repeating its continue token: FLANNEL_ERR_KUBE_LIST logged per round, two pages a round, /readyz 503 until a list completes', async () => {
    const { port, subnetFile } = await start('list-repeat-continue');
    const r = await afterPauses('listing nodes failed, backing off', 2);
    expect(r.pauses.every((e) => e.code === 'FLANNEL_ERR_KUBE_LIST')).toBe(true);
    expect(r.watches).toBe(0);
    expect(r.lists).toBeLessThanOrEqual(2 * (r.pauses.length + 1));
    // The network exists; the peers were never listed: not ready, and subnet.env waits for a complete list
    // to say no older Node has the podCIDR (docs/compatibility.md, "Who holds a contested subnet").
    expect(existsSync(subnetFile)).toBe(false);
    expect(await readyz(port)).toBe(503);
    api.misbehave(undefined);
    await waitFor(async () => (await readyz(port)) === 200, '/readyz 200 once a list completes', 30_000);
    expect(existsSync(subnetFile)).toBe(true);
    expect(logged('node list synced').length).toBe(1);
  }, 60_000);
});
