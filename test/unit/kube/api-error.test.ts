// The RBAC a 403 names (src/kube/api-error.ts): every rule the enabled features need, so one edit of the
// ClusterRole fixes it; --network-policy's list/watch on networkpolicies (networking.k8s.io), pods and
// namespaces only with that feature on; doctor's get/list on Services and EndpointSlices only for doctor. deploy/base's ClusterRole carries them all (test/integration/deploy.test.ts).
import { describe, expect, it } from '@jest/globals';
import { AGENT_RBAC_RULES, AGENT_RBAC_TEXT, rbacFix, rbacNeeds, rbacRefusal } from '../../../src/kube/api-error.js';
import { NETPOL_RESOURCES } from '../../../src/policy/sources.js';

const forbidden = (resource: string, verb: string) => ({
  statusCode: 403,
  body: JSON.stringify({ kind: 'Status', message: `${resource} is forbidden: User "x" cannot ${verb} resource "${resource}" in API group "" at the cluster scope` }),
});

describe('the RBAC a 403 names', () => {
  it('without features: the base rules only', () => {
    expect(rbacNeeds([])).toBe('pods: get; nodes: get, list, watch; nodes/status: patch; events: create, patch');
    expect(AGENT_RBAC_TEXT).toBe(rbacNeeds([]));
    expect(rbacFix([])).not.toContain('networkpolicies');
  });

  it('with --network-policy: also list/watch on networkpolicies.networking.k8s.io, pods and namespaces', () => {
    expect(rbacNeeds(['network-policy'])).toBe(
      'pods: get; nodes: get, list, watch; nodes/status: patch; events: create, patch; pods: list, watch; namespaces: list, watch; networkpolicies.networking.k8s.io: list, watch',
    );
    expect(rbacRefusal(forbidden('pods', 'list'), ['network-policy'])).toEqual({ permission: 'pods: list', fix: rbacFix(['network-policy']) });
  });

  it("doctor's (in the DaemonSet pod): get/list on services and endpointslices.discovery.k8s.io, never in the agent's own fix", () => {
    expect(rbacNeeds(['doctor'])).toBe(`${AGENT_RBAC_TEXT}; services: get, list; endpointslices.discovery.k8s.io: get, list`);
    expect(rbacFix(['network-policy'])).not.toContain('services');
  });

  it('every resource the controller lists and watches has its rule, tagged with the feature', () => {
    for (const r of NETPOL_RESOURCES) {
      expect(AGENT_RBAC_RULES).toContainEqual({ group: r.group, resource: r.resource, verbs: ['list', 'watch'], feature: 'network-policy' });
    }
  });
});
