// --network-policy (FLANNELD_NETWORK_POLICY): off by default, as flannel enforces no NetworkPolicy (upstream
// documents policy only as a Linux sidecar, flannel-io/flannel PR #2503); the controller watches the API
// server, so it needs the kube subnet manager (issue 35, docs/network-policy.md "The controller").
import { describe, expect, it } from '@jest/globals';
import { parseConfig } from '../../../src/config/parse.js';
import type { AgentConfig } from '../../../src/config/agent-config.js';
import { FlagError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

const BASE = ['--dataplane', 'simulated'];

function run(argv: string[], env: Record<string, string | undefined> = {}): AgentConfig {
  const cmd = parseConfig(argv, env, { platform: 'linux' });
  if (cmd.kind !== 'run') throw new Error(`expected run, got ${cmd.kind}`);
  return cmd.config;
}

describe('--network-policy', () => {
  it('is off by default', () => {
    expect(run([...BASE, '--kube-subnet-mgr'], { NODE_NAME: 'n1' }).networkPolicy).toBe(false);
  });

  it('turns the controller on, by flag or by FLANNELD_NETWORK_POLICY', () => {
    expect(run([...BASE, '--kube-subnet-mgr', '--network-policy'], { NODE_NAME: 'n1' }).networkPolicy).toBe(true);
    expect(run([...BASE, '--kube-subnet-mgr'], { NODE_NAME: 'n1', FLANNELD_NETWORK_POLICY: 'true' }).networkPolicy).toBe(true);
  });

  it('needs the kube subnet manager: the policies come from the API server', () => {
    expect(expectCode(() => run([...BASE, '--network-policy']), FlagError, 'FLANNEL_ERR_FLAG').context).toMatchObject({ flag: 'network-policy' });
  });
});
