// The Nodes with a podCIDR and no flannel lease (src/subnet/kube/unleased-claimants.ts): who keeps a podCIDR
// against the own Node registered again with it, table-driven, and the wait for it to be free.
import { describe, expect, it } from '@jest/globals';
import type { NodeLease } from '../../../../src/subnet/kube/node-list-watch.js';
import { UnleasedClaimants } from '../../../../src/subnet/kube/unleased-claimants.js';

const CIDR = '10.244.5.0/24';
const OWN_CREATED = Date.parse('2024-05-01T10:00:00Z');
const OLDER = Date.parse('2020-01-01T00:00:00Z');

const node = (name: string, created: number | undefined, podCIDR: string | undefined = CIDR, leased = false): NodeLease => ({
  name,
  ...(podCIDR !== undefined ? { podCIDR } : {}),
  ...(created !== undefined ? { created } : {}),
  ...(leased ? { subnetManager: 'true', backendType: 'vxlan', publicIP: '10.0.0.12' } : {}),
});

type Step = ['seen', NodeLease] | ['deleted', NodeLease] | ['list', NodeLease[]];

function keeperAfter(steps: Step[]): string | undefined {
  const c = new UnleasedClaimants('win1');
  for (const step of steps) {
    if (step[0] === 'seen') c.seen(step[1]);
    else if (step[0] === 'deleted') c.deleted(step[1]);
    else {
      c.listStarted();
      step[1].forEach((n) => c.seen(n));
      c.listEnded();
    }
  }
  return c.keeperOf(CIDR, OWN_CREATED);
}

describe('UnleasedClaimants', () => {
  it.each<[string, Step[], string | undefined]>([
    ['an older Node without a lease keeps its podCIDR', [['seen', node('linux-new', OLDER)]], 'linux-new'],
    ['a newer one does not', [['seen', node('linux-new', OWN_CREATED + 1000)]], undefined],
    [
      'the same second: the name that sorts first',
      [
        ['seen', node('a-node', OWN_CREATED)],
        ['seen', node('z-node', OWN_CREATED)],
      ],
      'a-node',
    ],
    ['without a creation time it never claims first', [['seen', node('linux-new', undefined)]], undefined],
    ['another podCIDR: nothing', [['seen', node('linux-new', OLDER, '10.244.6.0/24')]], undefined],
    ["a Node with a lease is the peer store's, not kept here", [['seen', node('linux-new', OLDER, CIDR, true)]], undefined],
    [
      'leased later: dropped',
      [
        ['seen', node('linux-new', OLDER)],
        ['seen', node('linux-new', OLDER, CIDR, true)],
      ],
      undefined,
    ],
    [
      'deleted: dropped',
      [
        ['seen', node('linux-new', OLDER)],
        ['deleted', node('linux-new', OLDER)],
      ],
      undefined,
    ],
    [
      'a relist without it (deleted while the watch was down): dropped',
      [
        ['seen', node('linux-new', OLDER)],
        ['list', [node('linux-1', OLDER, '10.244.1.0/24')]],
      ],
      undefined,
    ],
    ['the own Node is never its own claimant', [['seen', node('win1', OLDER)]], undefined],
    [
      'the oldest of two',
      [
        ['seen', node('b', OLDER + 1)],
        ['seen', node('c', OLDER)],
      ],
      'c',
    ],
  ])('%s', (_name, steps, keeper) => {
    expect(keeperAfter(steps)).toBe(keeper);
  });

  it('whenFree resolves once the keeper is gone, and rejects when aborted', async () => {
    const c = new UnleasedClaimants('win1');
    c.seen(node('linux-new', OLDER));
    let freed = false;
    const free = c.whenFree(CIDR, OWN_CREATED, new AbortController().signal).then(() => (freed = true));
    await Promise.resolve();
    expect(freed).toBe(false);
    c.seen(node('linux-new', OLDER, '10.244.9.0/24'));
    await free;
    expect(freed).toBe(true);

    c.seen(node('other', OLDER));
    const ac = new AbortController();
    const waiting = c.whenFree(CIDR, OWN_CREATED, ac.signal);
    ac.abort(new Error('round ended'));
    await expect(waiting).rejects.toThrow('round ended');
  });
});
