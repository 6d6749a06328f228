// net-conf.json changed under a running agent (src/subnet/net-conf-watch.ts): it is re-read on the
// injected clock, and a change is said once (a log line and an Event on the own Node) with what changed,
// that a restart applies it and, for a VNI change, kube-proxy's new --network-name.
import { describe, expect, it } from '@jest/globals';
import { silentLogger } from '../../../src/basics/log.js';
import type { NodeEvent } from '../../../src/node-events.js';
import { parseNetConf } from '../../../src/subnet/net-conf.js';
import { NET_CONF_CHANGED_REASON, netConfChanges, watchNetConf } from '../../../src/subnet/net-conf-watch.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { logSink } from '../../support/log-sink.js';

const conf = (o: object) => parseNetConf(JSON.stringify(o));
const VXLAN_4096 = { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } };
const VXLAN_4097 = { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4097, Port: 4789 } };

describe('netConfChanges', () => {
  it.each<[string, object, object, string[]]>([
    ['nothing', VXLAN_4096, VXLAN_4096, []],
    ['the VNI (and so the network name)', VXLAN_4096, VXLAN_4097, ['Backend.VNI 4096 -> 4097', 'HNS network flannel.4096 -> flannel.4097']],
    [
      'the VNI with a fixed Name',
      { ...VXLAN_4096, Backend: { ...VXLAN_4096.Backend, Name: 'vxlan0' } },
      { ...VXLAN_4097, Backend: { ...VXLAN_4097.Backend, Name: 'vxlan0' } },
      ['Backend.VNI 4096 -> 4097'],
    ],
    ['the Network', VXLAN_4096, { ...VXLAN_4096, Network: '10.245.0.0/16' }, ['Network 10.244.0.0/16 -> 10.245.0.0/16']],
    [
      'the backend type',
      VXLAN_4096,
      { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } },
      ['Backend.Type vxlan -> host-gw', 'Backend.VNI 4096 -> (unset)', 'Backend.Port 4789 -> (unset)', 'Backend.MacPrefix 0E-2A -> (unset)', 'HNS network flannel.4096 -> cbr0'],
    ],
    ['only a key the agent ignores (EnableNFTables)', VXLAN_4096, { ...VXLAN_4096, EnableNFTables: true }, []],
  ])('%s', (_what, a, b, want) => {
    expect(netConfChanges(conf(a), conf(b)).map((c) => `${c.key} ${c.running} -> ${c.file}`)).toEqual(want);
  });
});

describe('watchNetConf', () => {
  it('says a VNI change once, as a log line and an Event naming kube-proxy’s new network; again only when it changes again', async () => {
    const clock = new FakeClock();
    let file: object | 'broken' = VXLAN_4096;
    const events: NodeEvent[] = [];
    const sink = logSink('info');
    const ctrl = new AbortController();
    const done = watchNetConf({
      path: '/etc/kube-flannel/net-conf.json',
      read: () => {
        if (file === 'broken') throw new Error('unexpected end of JSON input');
        return conf(file);
      },
      running: conf(VXLAN_4096),
      clock,
      intervalMs: 1000,
      log: sink.log,
      events: { record: (e) => events.push(e) },
      signal: ctrl.signal,
    });
    await clock.advance(1000);
    expect(events).toEqual([]);

    file = VXLAN_4097;
    await clock.advance(1000);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ type: 'Warning', reason: NET_CONF_CHANGED_REASON });
    expect(events[0].message).toContain('Backend.VNI 4096 -> 4097');
    expect(events[0].message).toContain('restart flanneld on this node to apply them');
    expect(events[0].message).toContain("kube-proxy's --network-name (KUBE_NETWORK) must become flannel.4097");
    const warned = sink.entries.filter((e) => e['message'] === 'net-conf.json changed; a restart applies it');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ level: 'warn', changes: 'Backend.VNI 4096 -> 4097, HNS network flannel.4096 -> flannel.4097', newNetwork: 'flannel.4097' });

    // The same change read again: said once.
    await clock.advance(3000);
    expect(events).toHaveLength(1);

    // A broken file: a warning, no Event; then back to the running settings.
    file = 'broken';
    await clock.advance(1000);
    expect(sink.entries.some((e) => e['level'] === 'warn' && String(e['message']).startsWith('cannot re-read net-conf.json'))).toBe(true);
    file = VXLAN_4096;
    await clock.advance(1000);
    expect(sink.entries.some((e) => e['message'] === 'net-conf.json is back to the settings this agent runs with')).toBe(true);
    file = VXLAN_4097;
    await clock.advance(1000);
    expect(events).toHaveLength(2);

    ctrl.abort();
    await flush();
    await done;
  });

  it('stops when the agent stops', async () => {
    const clock = new FakeClock();
    const ctrl = new AbortController();
    const done = watchNetConf({
      path: 'x',
      read: () => conf(VXLAN_4096),
      running: conf(VXLAN_4096),
      clock,
      log: silentLogger(),
      events: { record: () => undefined },
      signal: ctrl.signal,
    });
    await flush();
    expect(clock.pending()).toEqual([30_000]);
    ctrl.abort(new Error('stop'));
    await done;
  });
});
