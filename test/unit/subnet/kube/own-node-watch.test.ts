// The own Node followed through the Node list-watch (src/subnet/kube/own-node-watch.ts): what each
// sighting means, table-driven.
import { describe, expect, it } from '@jest/globals';
import type { OwnLeaseChange } from '../../../../src/subnet/lease.js';
import type { NodeLease } from '../../../../src/subnet/kube/node-list-watch.js';
import { OwnNodeWatch } from '../../../../src/subnet/kube/own-node-watch.js';

type Step = ['seen', NodeLease] | ['deleted', NodeLease] | ['list', NodeLease[]];

const own = (uid: string | undefined, podCIDR?: string): NodeLease => ({ name: 'win1', ...(uid ? { uid } : {}), ...(podCIDR ? { podCIDR } : {}) });
const peer: NodeLease = { name: 'linux1', uid: 'p', podCIDR: '10.244.1.0/24' };

/** `uid` null: the lease was taken from a Node without one. */
function run(steps: Step[], uid: string | null): string[] {
  const changes: OwnLeaseChange[] = [];
  const w = new OwnNodeWatch({ node: 'win1', uid: uid ?? undefined, subnet: '10.244.7.0/24', onChange: (c) => changes.push(c) });
  for (const step of steps) {
    if (step[0] === 'seen') w.seen(step[1]);
    else if (step[0] === 'deleted') w.deleted(step[1]);
    else {
      w.listStarted();
      for (const n of step[1]) w.seen(n);
      w.listEnded();
    }
  }
  return changes.map((c) => (c.kind === 'replaced' ? `replaced ${c.subnet}` : c.kind));
}

describe('OwnNodeWatch', () => {
  it.each<[string, Step[], string[], (string | null)?]>([
    ['the own Node modified: nothing', [['seen', own('u1', '10.244.7.0/24')]], []],
    ['a peer deleted: nothing', [['deleted', peer]], []],
    ['a list with the own Node: nothing', [['list', [peer, own('u1', '10.244.7.0/24')]]], []],
    [
      'DELETED of the own Node: lost, once',
      [
        ['deleted', own('u1')],
        ['deleted', own('u1')],
      ],
      ['lost'],
    ],
    ['a list without it: lost', [['list', [peer]]], ['lost']],
    [
      'deleted, registered again with a podCIDR: replaced',
      [
        ['deleted', own('u1')],
        ['seen', own('u2', '10.244.9.0/24')],
      ],
      ['lost', 'replaced 10.244.9.0/24'],
    ],
    ['registered again unseen (a new uid in a list): replaced', [['list', [own('u2', '10.244.7.0/24')]]], ['replaced 10.244.7.0/24']],
    [
      'registered again without a podCIDR yet: lost, then replaced once it has one',
      [
        ['deleted', own('u1')],
        ['seen', own('u2')],
        ['seen', own('u2', '10.244.9.0/24')],
        ['seen', own('u2', '10.244.9.0/24')],
      ],
      ['lost', 'replaced 10.244.9.0/24'],
    ],
    ['a new uid without a podCIDR and no DELETED seen: lost', [['seen', own('u2')]], ['lost']],
    // Until the agent leases again (it may not at once: an older peer may hold the new podCIDR), the
    // watch follows the Node that replaced the lease's.
    [
      'after a replacement the new Node is followed: seen again, nothing; a late DELETED of the old one, nothing',
      [
        ['seen', own('u2', '10.244.1.0/24')],
        ['seen', own('u2', '10.244.1.0/24')],
        ['deleted', own('u1')],
        ['list', [own('u2', '10.244.1.0/24')]],
      ],
      ['replaced 10.244.1.0/24'],
    ],
    [
      'after a replacement the new Node deleted and registered again: lost, replaced again',
      [
        ['seen', own('u2', '10.244.1.0/24')],
        ['deleted', own('u2')],
        ['seen', own('u3', '10.244.9.0/24')],
      ],
      ['replaced 10.244.1.0/24', 'lost', 'replaced 10.244.9.0/24'],
    ],
    [
      'missing from one list, then back with the same uid: lost, back',
      [
        ['list', [peer]],
        ['list', [own('u1', '10.244.7.0/24')]],
      ],
      ['lost', 'back'],
    ],
    ['a DELETED of an older incarnation: nothing', [['deleted', own('u0')]], []],
    [
      'no uid known at the lease: the first one seen is it',
      [
        ['seen', own('u5', '10.244.7.0/24')],
        ['seen', own('u6', '10.244.8.0/24')],
      ],
      ['replaced 10.244.8.0/24'],
      null,
    ],
  ])('%s', (_name, steps, want, uid = 'u1') => {
    expect(run(steps, uid)).toEqual(want);
  });

  it("a replacement carries the new Node's creationTimestamp (who keeps a contested subnet)", () => {
    const changes: OwnLeaseChange[] = [];
    const w = new OwnNodeWatch({ node: 'win1', uid: 'u1', subnet: '10.244.7.0/24', onChange: (c) => changes.push(c) });
    w.seen({ ...own('u2', '10.244.1.0/24'), created: 1_700_000_000_000 });
    expect(changes).toEqual([{ kind: 'replaced', subnet: '10.244.1.0/24', created: 1_700_000_000_000, reason: expect.stringContaining('u1 -> u2') }]);
  });

  it('in a list, the own Node is told once the list is complete: the other Nodes it holds are known by then', () => {
    const changes: OwnLeaseChange[] = [];
    const w = new OwnNodeWatch({ node: 'win1', uid: 'u1', subnet: '10.244.7.0/24', onChange: (c) => changes.push(c) });
    w.listStarted();
    w.seen(own('u2', '10.244.1.0/24'));
    w.seen(peer);
    expect(changes).toEqual([]);
    w.listEnded();
    expect(changes.map((c) => c.kind)).toEqual(['replaced']);
    // A list that fails part-way tells nothing; the next one, complete, does.
    w.listStarted();
    w.seen(own('u3', '10.244.2.0/24'));
    w.listStarted();
    w.seen(own('u3', '10.244.2.0/24'));
    w.listEnded();
    expect(changes.map((c) => (c.kind === 'replaced' ? c.subnet : c.kind))).toEqual(['10.244.1.0/24', '10.244.2.0/24']);
  });
});
