// The built CLI started before its ClusterRole is applied (a DaemonSet applied before its RBAC, or the
// ClusterRole applied by hand later): a real kube-apiserver answers 403 until the binding's ClusterRole
// exists (src/demo/kube-fake/rbac-startup.ts; kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go).
// Upstream waits up to 10 minutes for its Node informer (flannel pkg/subnet/kube/kube.go
// nodeControllerSyncTimeout); this agent stays up, not ready, retrying with backoff for as long as
// --node-wait-timeout, and logs each 403 as a refusal naming the permission and the fix. The grant comes
// after the point where it used to give up (the fifth refusal, 15 s in: 1, 2, 4, 8 s of backoff), as an
// event of the agent's own, not after a sleep.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { rbacNeeds } from '../../src/kube/api-error.js';
import { TestCluster, VXLAN_NET_CONF, WIN_IP, waitFor } from '../support/cluster.js';

const REFUSED = 'the API server refuses the agent (RBAC); retrying until its ClusterRole grants it';

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: 'win', internalIP: WIN_IP });
});
afterEach(() => cluster.stop());

describe('RBAC applied after the agent started (built CLI)', () => {
  it('stays up and not ready through the refusals, then leases once the ClusterRole is applied', async () => {
    cluster.api.rbac = 'role-missing';
    const agent = await cluster.startProcess({ nodeName: 'win', netConf: VXLAN_NET_CONF, args: [`--iface=${WIN_IP}`] });
    const refusals = () => agent.lines.filter((l) => l.message === REFUSED);
    const exited = () => (agent.child.exitCode !== null ? `the agent exited ${agent.child.exitCode}: ${agent.dump()}` : undefined);
    await waitFor(() => refusals().length >= 5, 'the fifth refusal', { timeoutMs: 40_000, failIf: exited, detail: () => agent.dump() });
    expect(agent.child.exitCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${agent.port}/readyz`)).status).toBe(503);
    expect(refusals()[0]).toMatchObject({ level: 'warn', permission: 'nodes: get', node: 'win' });
    expect(String(refusals()[0]['fix'])).toContain('kubectl apply -k deploy/overlays/');
    expect(agent.lines.filter((l) => l['reason'] === 'API unreachable')).toEqual([]);

    cluster.api.rbac = 'granted';
    await waitFor(async () => (await fetch(`http://127.0.0.1:${agent.port}/readyz`)).status === 200, 'readyz 200 after the grant', {
      timeoutMs: 40_000,
      failIf: exited,
    });
    expect(cluster.api.getNode('win')?.metadata.annotations?.['flannel.alpha.coreos.com/kube-subnet-manager']).toBe('true');
  }, 90_000);

  it("with --network-policy: each refusal and the give-up name the NetworkPolicy controller's rules too", async () => {
    cluster.api.rbac = 'role-missing';
    const agent = await cluster.startProcess({ nodeName: 'win', netConf: VXLAN_NET_CONF, args: [`--iface=${WIN_IP}`, '--network-policy', '--node-wait-timeout=3'] });
    const code = await agent.exited;
    expect(code).not.toBe(0);
    const needs = rbacNeeds(['network-policy']);
    const refusal = agent.lines.find((l) => l.message === REFUSED);
    expect(String(refusal?.['fix'])).toContain(needs);
    expect(agent.dump()).toMatch(
      /FLANNEL_ERR_KUBE[^\n]*it needs pods: get; nodes: get, list, watch; nodes\/status: patch; events: create, patch; pods: list, watch; namespaces: list, watch; networkpolicies\.networking\.k8s\.io: list, watch/,
    );
  }, 60_000);
});
