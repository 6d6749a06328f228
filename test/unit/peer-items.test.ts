// PeerItems: the Reconciler's record of which peer owns which desired keys.
import { describe, expect, it } from '@jest/globals';
import { PeerItems } from '../../src/backends/peer-items.js';

describe('PeerItems', () => {
  it.each([
    { name: 'a peer alone: all its keys are orphaned when it goes', own: [['a', ['k1', 'k2']]], release: 'a', orphans: ['k1', 'k2'], size: 0 },
    {
      name: 'a key another peer claimed later stays with that peer',
      own: [
        ['a', ['k1', 'k2']],
        ['b', ['k2']],
      ],
      release: 'a',
      orphans: ['k1'],
      size: 1,
    },
    {
      name: 'a peer that lost its key to a later claimant orphans nothing of it',
      own: [
        ['a', ['k1']],
        ['b', ['k1']],
      ],
      release: 'a',
      orphans: [],
      size: 1,
    },
    { name: 'items of no peer are not recorded', own: [['', ['k1']]], release: '', orphans: [], size: 0 },
    { name: 'an unknown peer releases nothing', own: [['a', ['k1']]], release: 'x', orphans: [], size: 1 },
  ] as { name: string; own: [string, string[]][]; release: string; orphans: string[]; size: number }[])('$name', ({ own, release, orphans, size }) => {
    const p = new PeerItems();
    for (const [peer, keys] of own) p.own(peer, keys);
    expect(p.release(release)).toEqual(orphans);
    expect(p.size).toBe(size);
  });

  it('names the owner of a key and counts the peers whose keys are all held', () => {
    const p = new PeerItems();
    p.own('a', ['k1', 'k2']);
    p.own('b', ['k3']);
    expect(p.owner('k2')).toBe('a');
    expect(p.owner('k9')).toBeUndefined();
    expect(p.countHeld((k) => k !== 'k2')).toBe(1);
    expect(p.countHeld(() => true)).toBe(2);
    p.clear();
    expect(p.size).toBe(0);
    expect(p.owner('k1')).toBeUndefined();
  });
});
