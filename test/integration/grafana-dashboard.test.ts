// deploy/grafana/flanneld-windows.json, the dashboard operators import into Grafana as is: it parses, takes
// its Prometheus from the `DS_PROMETHEUS` input (as an exported dashboard does), and every query of every
// panel is valid PromQL naming only families that the agent exports, read from the /metrics of a running
// agent (the built CLI on the simulated node, against the fake API server), not from a list kept here.
// Every family docs/metrics.md lists to alert on is on some panel; its example queries are checked alike. The queries are parsed with
// Prometheus' own PromQL grammar (@prometheus-io/lezer-promql, the one the Prometheus UI uses).
// The state gauges its readiness and peers panels read follow /readyz and /status.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { parser } from '@prometheus-io/lezer-promql';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderCniConfig } from '../../src/cni/conflist.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { metricValue } from '../support/agent-signals.js';
import { TestCluster, VXLAN_NET_CONF, waitFor } from '../support/cluster.js';

const DASHBOARD = 'deploy/grafana/flanneld-windows.json';
const WIN = 'win-1';
const WIN_IP = '10.0.0.7';

interface Target {
  expr?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
}
interface Dashboard {
  __inputs: { name: string; type: string; pluginId: string }[];
  schemaVersion: number;
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: { query: string }; datasource: { uid: string } }[] };
}

/** Every panel, those inside rows too. */
function allPanels(panels: Panel[]): Panel[] {
  return panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);
}

/** A Grafana query as Prometheus receives it: the interval variables become a duration ($node, $instance sit inside label values). */
const asPromQL = (expr: string) => expr.replace(/\$__(rate_interval|interval|range)\b/g, '5m');

/** The metric names a PromQL expression selects, and where it does not parse (or selects no metric by name). */
function selected(expr: string): { names: string[]; problems: string[] } {
  const names: string[] = [];
  const problems: string[] = [];
  parser.parse(expr).iterate({
    enter: (n) => {
      if (n.type.isError) problems.push(`syntax error at ${n.from}: ${expr.slice(n.from, n.from + 20)}`);
      if (n.name === 'VectorSelector') {
        const id = n.node.getChild('Identifier');
        if (id) names.push(expr.slice(id.from, id.to));
        else problems.push(`a selector without a metric name: ${expr.slice(n.from, n.to)}`);
      }
    },
  });
  return { names, problems };
}

/** The names the exposition lets a query select: each family, and a histogram's _bucket, _sum and _count. */
function exportedNames(exposition: string): { families: Set<string>; names: Map<string, string> } {
  const families = new Set<string>();
  const names = new Map<string, string>();
  for (const [, family, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    families.add(family);
    names.set(family, family);
    if (type === 'histogram' || type === 'summary') for (const s of ['_bucket', '_sum', '_count']) names.set(family + s, family);
  }
  return { families, names };
}

/** The families docs/metrics.md lists to alert on (its list after "the ones to alert on:"). */
function alertWorthy(): string[] {
  const doc = readFileSync('docs/metrics.md', 'utf8');
  const start = doc.indexOf('the ones to alert on:');
  expect(start).toBeGreaterThan(0);
  const list = doc.slice(start).split('\n\n')[1];
  expect(list.startsWith('- ')).toBe(true);
  return [...new Set([...list.matchAll(/`(flannel_[a-z0-9_]+)[`{]/g)].map((m) => m[1]))];
}

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: WIN, internalIP: WIN_IP });
});
afterEach(() => cluster.stop());

describe(DASHBOARD, () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  const panels = allPanels(dashboard.panels).filter((p) => p.type !== 'row');

  it('is an exported dashboard: the current schema, its Prometheus from the DS_PROMETHEUS input, node and instance to choose', () => {
    expect(dashboard.schemaVersion).toBe(42);
    expect(dashboard.uid).toBe('flanneld-windows');
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' })]);
    expect(panels.length).toBeGreaterThan(10);
    for (const p of panels) {
      expect({ panel: p.title, uid: p.datasource?.uid }).toEqual({ panel: p.title, uid: '${DS_PROMETHEUS}' });
      for (const t of p.targets ?? []) expect({ panel: p.title, uid: t.datasource?.uid }).toEqual({ panel: p.title, uid: '${DS_PROMETHEUS}' });
    }
    expect(dashboard.templating.list.map((v) => [v.name, v.type, v.datasource.uid])).toEqual([
      ['node', 'query', '${DS_PROMETHEUS}'],
      ['instance', 'query', '${DS_PROMETHEUS}'],
    ]);
  });

  it('the query check finds a syntax error, a selector without a name, and every name of a valid query', () => {
    expect(selected('sum by (le) (rate(a_bucket{node=~"$node"}[5m])) / on() b').names).toEqual(['a_bucket', 'b']);
    expect(selected('sum by (le (rate(a[5m]))').problems).not.toEqual([]);
    expect(selected('{__name__="a"}').problems).toEqual(['a selector without a metric name: {__name__="a"}']);
  });

  it('every query is valid PromQL naming only families a running agent exports, and every alert-worthy family is on a panel', async () => {
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: [`--iface=${WIN_IP}`] });
    await agent.waitReady();
    // Past the start, so the HNS call families have their first series too (their TYPE lines are there from the start).
    const exposition = await waitFor(
      async () => {
        const t = await agent.metrics();
        return metricValue(t, 'flannel_hns_call_duration_seconds_count') > 0 ? t : undefined;
      },
      'a timed HNS call',
      30_000,
    );
    const { families, names } = exportedNames(exposition);

    const onPanels = new Set<string>();
    const unknown: string[] = [];
    const problems: string[] = [];
    for (const p of panels) {
      if (!p.targets?.length) problems.push(`${p.title}: no query`);
      for (const t of p.targets ?? []) {
        const q = selected(asPromQL(t.expr ?? ''));
        problems.push(...q.problems.map((x) => `${p.title}: ${x}`));
        for (const n of q.names) {
          const family = names.get(n);
          if (family) onPanels.add(family);
          else unknown.push(`${p.title}: ${n}`);
        }
      }
    }
    for (const v of dashboard.templating.list) {
      const metric = /^label_values\((\w+)/.exec(v.query.query)?.[1];
      if (!metric || !names.has(metric)) unknown.push(`variable ${v.name}: ${v.query.query}`);
    }
    expect(problems).toEqual([]);
    expect(unknown).toEqual([]);

    // docs/metrics.md's example queries too.
    const doc = readFileSync('docs/metrics.md', 'utf8');
    const examples = [...doc.matchAll(/```promql\n([\s\S]*?)```/g)].flatMap((m) => m[1].split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#')));
    expect(examples.length).toBeGreaterThan(3);
    for (const e of examples) {
      const q = selected(e);
      expect({ query: e, problems: q.problems, unknown: q.names.filter((n) => !names.has(n)) }).toEqual({ query: e, problems: [], unknown: [] });
    }

    const worthy = alertWorthy();
    expect(worthy).toEqual(expect.arrayContaining(['flannel_hns_call_duration_seconds', 'flannel_hns_call_errors_total', 'flannel_hns_restarts_total']));
    expect(worthy.filter((f) => !families.has(f))).toEqual([]);
    expect(worthy.filter((f) => !onPanels.has(f))).toEqual([]);
  }, 60_000);

  it('the readiness and peers panels read what /readyz and /status say', async () => {
    const dir = join(cluster.dir, WIN);
    const [confDir, binDir] = [join(dir, 'net.d'), join(dir, 'bin')];
    mkdirSync(confDir, { recursive: true });
    mkdirSync(binDir, { recursive: true });
    for (const f of ['flannel.exe', 'win-overlay.exe', 'host-local.exe']) writeFileSync(join(binDir, f), 'MZ');
    // A peer whose lease is rejected (VNI 1: Windows needs 4096 and up), beside the accepted linux-1.
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan', vni: 1 }));
    const agent = await cluster.startProcess({
      nodeName: WIN,
      netConf: VXLAN_NET_CONF,
      args: [`--iface=${WIN_IP}`, `--cni-conf-dir=${confDir}`, `--cni-bin-dir=${binDir}`],
    });
    const base = `http://127.0.0.1:${agent.port}`;
    const readyz = async () => (await fetch(`${base}/readyz`)).status;
    const gauges = async () => {
      const t = await agent.metrics();
      return {
        ready: metricValue(t, 'flannel_ready'),
        desired: metricValue(t, 'flannel_peers'),
        programmed: metricValue(t, 'flannel_peers_programmed'),
        rejected: metricValue(t, 'flannel_peers_rejected'),
      };
    };

    // No CNI config yet: the network is up, but pods cannot start.
    const slow = { timeoutMs: 30_000, detail: () => agent.dump() };
    await waitFor(async () => (await gauges()).programmed === 1 && (await readyz()) === 503, 'the peer programmed, /readyz 503 (no CNI config)', slow);
    expect(await gauges()).toEqual({ ready: 0, desired: 1, programmed: 1, rejected: 1 });

    const conf = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(VXLAN_NET_CONF)),
      subnetFile: agent.subnetFile,
      dataDir: join(dir, 'flannel'),
      serviceCidr: '10.96.0.0/12',
      managementIP: WIN_IP,
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
    });
    writeFileSync(join(confDir, '10-flannel.conflist'), JSON.stringify(conf));
    await waitFor(async () => (await readyz()) === 200, '/readyz 200 with the CNI config', slow);
    expect(await gauges()).toEqual({ ready: 1, desired: 1, programmed: 1, rejected: 1 });
    const status = (await (await fetch(`${base}/status`)).json()) as { ready: boolean; peers: { desired: number; programmed: number; rejected: number } };
    expect({ ready: status.ready, ...status.peers }).toMatchObject({ ready: true, desired: 1, programmed: 1, rejected: 1 });
  }, 60_000);
});
