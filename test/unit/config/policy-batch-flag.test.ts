// --hns-policy-batch-size: the operator's escape hatch for a node whose HNS mishandles several policies in
// one HcnModifyNetwork (nobody has published whether HNS applies such a call atomically; upstream flannel's
// vxlan_network_windows.go sends one policy per call). The default is the vxlan driver's POLICY_BATCH.
import { describe, expect, it } from '@jest/globals';
import { POLICY_BATCH } from '../../../src/backends/vxlan/policies.js';
import { parseConfig } from '../../../src/config/parse.js';
import { FlagError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

describe('--hns-policy-batch-size', () => {
  const base = ['--kube-subnet-mgr', '--dataplane=simulated'];
  const env = { NODE_NAME: 'n' };
  const parse = (argv: string[], e: Record<string, string> = {}) => parseConfig([...base, ...argv], { ...env, ...e }, { platform: 'linux' });
  const cfg = (argv: string[], e: Record<string, string> = {}) => {
    const r = parse(argv, e);
    if (r.kind !== 'run') throw new Error('expected run');
    return r.config;
  };

  it('defaults to the vxlan batch; the flag and FLANNELD_HNS_POLICY_BATCH_SIZE set it; 1 is upstream one per call', () => {
    expect(cfg([]).hnsPolicyBatchSize).toBe(POLICY_BATCH);
    expect(cfg(['--hns-policy-batch-size', '1']).hnsPolicyBatchSize).toBe(1);
    expect(cfg([], { FLANNELD_HNS_POLICY_BATCH_SIZE: '16' }).hnsPolicyBatchSize).toBe(16);
    expect(cfg(['--hns-policy-batch-size=3'], { FLANNELD_HNS_POLICY_BATCH_SIZE: '16' }).hnsPolicyBatchSize).toBe(3);
  });

  it.each([['0'], ['-1'], ['10001'], ['many']])('%s is a FlagError naming the flag', (v) => {
    expect(expectCode(() => cfg([`--hns-policy-batch-size=${v}`]), FlagError, 'FLANNEL_ERR_FLAG').context['flag']).toBe('hns-policy-batch-size');
  });

  it('--help describes it', () => {
    const r = parse(['--help']);
    expect(r.kind).toBe('help');
    expect(JSON.stringify(r)).toMatch(/hns-policy-batch-size N[^"]*one policy per call/);
  });
});
