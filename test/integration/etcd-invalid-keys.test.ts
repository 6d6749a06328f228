// Lease keys that are not valid subnets of this network, against a real etcd: a key wider than
// SubnetLen (`10.5.0.0-16`, `0.0.0.0-0`) overlaps every candidate subnet. Upstream's allocateSubnet
// (flannel pkg/subnet/etcd/local_manager.go, IP4Net.Overlaps in pkg/ip/ipnet.go) skips every candidate
// that overlaps any lease, so one such key leaves every new node "out of subnets". This agent leaves
// keys wider than SubnetLen out of the allocation and logs each once.
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { EtcdSubnetManager } from '../../src/subnet/etcd/manager.js';
import { EtcdRegistry } from '../../src/subnet/etcd/registry.js';
import type { LeaseAttrs } from '../../src/subnet/lease.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { describeEtcd, EtcdServer } from '../support/etcd.js';
import { logSink } from '../support/log-sink.js';

const vxlan = (publicIP: string, mac: string) => (): Promise<LeaseAttrs> => Promise.resolve({ publicIP, backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: mac } });

describeEtcd('etcd: lease keys wider than SubnetLen (real etcd)', () => {
  const etcd = new EtcdServer();
  let admin: Etcd3;
  beforeAll(async () => {
    await etcd.start();
    admin = etcd.client();
  }, 30_000);
  afterAll(async () => {
    await etcd.destroy();
  }, 30_000);

  it.each([
    ['/wide1/network', ['10.5.0.0-16']],
    ['/wide2/network', ['0.0.0.0-0']],
    ['/wide3/network', ['10.0.0.0-8', '10.5.0.0-17', '0.0.0.0-0']],
  ])('%s with %j: new nodes still get subnets; each key logged once', async (prefix, wide) => {
    const conf = { Network: '10.5.0.0/16', SubnetMin: '10.5.52.0', SubnetMax: '10.5.54.0', Backend: { Type: 'vxlan', VNI: 4096 } };
    await admin.put(`${prefix}/config`).value(JSON.stringify(conf));
    for (const k of wide)
      await admin.put(`${prefix}/subnets/${k}`).value('{"PublicIP":"192.168.64.99","BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"c6:d2:32:6f:8f:99"}}');
    await admin.put(`${prefix}/subnets/10.5.52.0-24`).value('{"PublicIP":"192.168.64.3","BackendType":"host-gw"}');

    const { log, entries: lines } = logSink();
    const got: string[] = [];
    for (const n of [1, 2]) {
      const client = new Etcd3({ hosts: etcd.endpoint });
      const ctrl = new AbortController();
      const mgr = new EtcdSubnetManager({
        registry: new EtcdRegistry(client, prefix),
        prefix,
        netConf: parseNetConf(JSON.stringify(conf)),
        publicIP: `192.168.64.${10 + n}`,
        log,
        onClose: () => client.close(),
      });
      got.push((await mgr.acquireLease(vxlan(`192.168.64.${10 + n}`, `0e:2a:00:00:00:0${n}`), ctrl.signal)).subnet);
      ctrl.abort(new Error('test end'));
      mgr.close();
    }
    // 10.5.52.0/24 is a real lease (exact SubnetLen): still taken.
    expect(got.sort()).toEqual(['10.5.53.0/24', '10.5.54.0/24']);
    const warned = lines.filter((l) => String(l['message']).startsWith('ignoring lease key wider than SubnetLen'));
    // One line per key and manager (two managers here), not one per allocation attempt.
    expect(warned.map((l) => String(l['key'])).sort()).toEqual([...wide, ...wide].map((k) => `${prefix}/subnets/${k}`).sort());
  });
});
