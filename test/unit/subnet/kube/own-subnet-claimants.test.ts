// Who keeps the own podCIDR once the first complete Node list after a held lease is in
// (src/subnet/kube/own-subnet-claimants.ts), and the rule it applies (src/subnet/lease.ts claimsFirst: the
// older creationTimestamp, with equal times the name that sorts first), table-driven.
import { describe, expect, it } from '@jest/globals';
import { claimsFirst, type SubnetClaim } from '../../../../src/subnet/lease.js';
import type { NodeLease } from '../../../../src/subnet/kube/node-list-watch.js';
import { OwnSubnetClaimants } from '../../../../src/subnet/kube/own-subnet-claimants.js';

const T0 = Date.parse('2024-05-01T10:00:00Z');
const SUBNET = '10.244.9.0/24';
const node = (name: string, created: number | undefined, podCIDR = SUBNET): NodeLease => ({ name, podCIDR, ...(created !== undefined ? { created } : {}) });

type Step = ['list', NodeLease[]] | ['failed list', NodeLease[]] | ['deleted', NodeLease];

/** The own Node `win-m` created at `created`; the keeper each decision named (a name, or '-' for none). */
function run(created: number | undefined, steps: Step[]): string[] {
  const decided: string[] = [];
  const c = new OwnSubnetClaimants({ own: { key: 'win-m', subnet: SUBNET, ...(created !== undefined ? { created } : {}) }, decided: (k) => decided.push(k?.key ?? '-') });
  for (const step of steps) {
    if (step[0] === 'deleted') c.deleted(step[1]);
    else {
      c.listStarted();
      for (const n of step[1]) c.seen(n);
      if (step[0] === 'list') c.listEnded();
    }
  }
  return decided;
}

describe('claimsFirst', () => {
  it.each<[string, SubnetClaim, SubnetClaim, boolean]>([
    ['older', { key: 'z', created: T0 }, { key: 'a', created: T0 + 1000 }, true],
    ['younger', { key: 'a', created: T0 + 1000 }, { key: 'z', created: T0 }, false],
    ['equal times, name first', { key: 'a', created: T0 }, { key: 'b', created: T0 }, true],
    ['equal times, name second', { key: 'b', created: T0 }, { key: 'a', created: T0 }, false],
    ['a known time against an unknown one', { key: 'z', created: T0 }, { key: 'a' }, true],
    ['both unknown: the name', { key: 'a' }, { key: 'b' }, true],
    ['itself: no', { key: 'a', created: T0 }, { key: 'a', created: T0 }, false],
  ])('%s', (_what, a, b, first) => {
    expect(claimsFirst(a, b)).toBe(first);
    if (a.key !== b.key) expect(claimsFirst(b, a)).toBe(!first); // exactly one of two claimants wins
  });
});

describe('OwnSubnetClaimants', () => {
  it.each<[string, number | undefined, Step[], string[]]>([
    ['nobody else has the podCIDR', T0, [['list', [node('win-m', T0), node('linux-1', T0 - 5000, '10.244.1.0/24')]]], ['-']],
    ['an older Node has it', T0, [['list', [node('linux-1', T0 - 5000)]]], ['linux-1']],
    ['a younger Node has it: the own Node keeps it', T0, [['list', [node('linux-1', T0 + 5000)]]], ['-']],
    ['the same second, a name that sorts first', T0, [['list', [node('win-a', T0)]]], ['win-a']],
    ['the same second, a name that sorts after', T0, [['list', [node('win-z', T0)]]], ['-']],
    ['several: the first of them by the rule', T0, [['list', [node('c', T0 - 1000), node('b', T0 - 2000), node('a', T0 - 1000)]]], ['b']],
    ['the own Node of unknown age loses to a known one', undefined, [['list', [node('linux-1', T0)]]], ['linux-1']],
    [
      'a list that failed part-way decides nothing; the next one starts afresh',
      T0,
      [
        ['failed list', [node('linux-1', T0 - 5000)]],
        ['list', [node('linux-2', T0 + 5000)]],
      ],
      ['-'],
    ],
    ['a Node seen again with another podCIDR no longer counts', T0, [['list', [node('linux-1', T0 - 5000), node('linux-1', T0 - 5000, '10.244.1.0/24')]]], ['-']],
    [
      'decided once: a later list says nothing',
      T0,
      [
        ['list', []],
        ['list', [node('linux-1', T0 - 5000)]],
      ],
      ['-'],
    ],
  ])('%s', (_what, created, steps, decided) => {
    expect(run(created, steps)).toEqual(decided);
  });
});
