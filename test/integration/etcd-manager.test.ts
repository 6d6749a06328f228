// The etcd subnet manager against a real etcd (Debian's etcd-server, started per suite).
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { EtcdError, NetConfError } from '../../src/basics/errors.js';
import type { Lease, LeaseAttrs, LeaseUpdate } from '../../src/subnet/lease.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import type { NetworkConfig } from '../../src/subnet/net-conf-types.js';
import { fetchEtcdNetworkConfig } from '../../src/subnet/etcd/factory.js';
import { EtcdSubnetManager } from '../../src/subnet/etcd/manager.js';
import type { EtcdSubnetManagerOptions } from '../../src/subnet/etcd/manager.js';
import { EtcdRegistry } from '../../src/subnet/etcd/registry.js';
import { REVOKED_MESSAGE } from '../../src/subnet/etcd/lease-keeper.js';
import { LOG, waitFor } from '../support/cluster.js';
import { describeEtcd, EtcdServer, etcdPort, TcpProxy } from '../support/etcd.js';
import { expectCode } from '../support/errors.js';
import { logSink } from '../support/log-sink.js';

let prefixSeq = 0;

function flags(endpoint: string, prefix: string) {
  return {
    etcdEndpoints: [endpoint],
    etcdPrefix: prefix,
    etcdKeyfile: '',
    etcdCertfile: '',
    etcdCafile: '',
    etcdUsername: '',
    etcdPassword: '',
  };
}

function vxlanAttrs(publicIP: string, mac: string): (subnet: string) => Promise<LeaseAttrs> {
  return () => Promise.resolve({ publicIP, backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: mac } });
}

interface Harness {
  mgr: EtcdSubnetManager;
  ctrl: AbortController;
  updates: LeaseUpdate[];
  /** Current peer view built from the peers reported and the keys listed (key -> lease). */
  view: Map<string, Lease>;
  watching?: Promise<void>;
}

describeEtcd('etcd subnet manager (real etcd)', () => {
  const etcd = new EtcdServer();
  let admin: Etcd3;
  const harnesses: Harness[] = [];

  beforeAll(async () => {
    await etcd.start();
    admin = etcd.client();
  }, 30_000);

  afterAll(async () => {
    for (const h of harnesses) {
      h.ctrl.abort(new Error('test end'));
      await h.watching?.catch(() => undefined);
    }
    await etcd.destroy();
  }, 30_000);

  async function newPrefix(conf: unknown): Promise<{ prefix: string; netConf: NetworkConfig }> {
    const prefix = `/test${++prefixSeq}/network`;
    const text = JSON.stringify(conf);
    await admin.put(`${prefix}/config`).value(text);
    return { prefix, netConf: parseNetConf(text) };
  }

  function manager(prefix: string, netConf: NetworkConfig, publicIP: string, extra: Partial<EtcdSubnetManagerOptions> = {}, endpoint = etcd.endpoint): Harness {
    const client = new Etcd3({ hosts: endpoint });
    const mgr = new EtcdSubnetManager({
      registry: new EtcdRegistry(client, prefix),
      prefix,
      netConf,
      publicIP,
      onClose: () => client.close(),
      log: LOG,
      ...extra,
      timings: { backoffBaseMs: 50, backoffCapMs: 500, apiRetryTimeoutMs: 10_000, ...extra.timings },
    });
    const h: Harness = { mgr, ctrl: new AbortController(), updates: [], view: new Map() };
    harnesses.push(h);
    return h;
  }

  function watch(h: Harness): Promise<void> {
    h.watching = h.mgr.watchLeases((u) => {
      h.updates.push(u);
      // The peers as reported (a removal has no lease); a complete list drops every key it did not hold.
      if (u.kind === 'listed') {
        for (const key of [...h.view.keys()]) if (!u.keys.has(key)) h.view.delete(key);
      } else {
        for (const p of u.peers) {
          if (p.lease) h.view.set(p.key, p.lease);
          else h.view.delete(p.key);
        }
      }
    }, h.ctrl.signal);
    h.watching.catch(() => undefined);
    return h.watching;
  }

  async function stop(h: Harness): Promise<void> {
    h.ctrl.abort(new Error('stop'));
    await h.watching?.catch(() => undefined);
  }

  it('reads <prefix>/config; a missing config names the key and how to create it', async () => {
    const ctrl = new AbortController();
    const err = await expectCode(
      fetchEtcdNetworkConfig(flags(etcd.endpoint, '/missing/network'), { log: LOG, signal: ctrl.signal, waitTimeoutMs: 0 }),
      NetConfError,
      'FLANNEL_ERR_NET_CONF',
    );
    expect(err.context).toEqual({ key: '/missing/network/config' });

    const { prefix } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } });
    const conf = await fetchEtcdNetworkConfig(flags(etcd.endpoint, prefix), { log: LOG, signal: ctrl.signal, waitTimeoutMs: 0 });
    expect(conf).toMatchObject({ network: '10.5.0.0/16', subnetLen: 24, subnetMin: '10.5.1.0', subnetMax: '10.5.255.0' });

    await admin.put('/bad/network/config').value('{"Network": "10.5.0.0/30", "Backend": {"Type": "vxlan"}}');
    const bad = await expectCode(
      fetchEtcdNetworkConfig(flags(etcd.endpoint, '/bad/network'), { log: LOG, signal: ctrl.signal, waitTimeoutMs: 0 }),
      NetConfError,
      'FLANNEL_ERR_NET_CONF',
    );
    // The parse error (test/unit/subnet/net-conf.test.ts asserts its upstream text) is the cause; the key is added.
    expect(bad.context).toEqual({ key: '/bad/network/config' });
    expect(bad.cause).toBeInstanceOf(NetConfError);
  });

  it('three managers get distinct subnets, published in upstream format under 24 h leases, and see each other', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } });
    const hs = ['192.168.64.3', '192.168.64.4', '192.168.64.5'].map((ip) => manager(prefix, netConf, ip));
    const leases = await Promise.all(hs.map((h, i) => h.mgr.acquireLease(vxlanAttrs(`192.168.64.${i + 3}`, `c6:d2:32:6f:8f:4${i}`), h.ctrl.signal)));
    expect(new Set(leases.map((l) => l.subnet)).size).toBe(3);
    for (const l of leases) {
      expect(l.subnet).toMatch(/^10\.5\.\d+\.0\/24$/);
      expect(l.key).toBe(l.subnet.replace('/', '-'));
    }
    const raw = await admin.get(`${prefix}/subnets/${leases[0].key}`).exec();
    expect(raw.kvs[0].value.toString()).toBe('{"PublicIP":"192.168.64.3","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"c6:d2:32:6f:8f:40"}}');
    const ttl = await admin.leaseClient.leaseTimeToLive({ ID: raw.kvs[0].lease });
    expect(Number(ttl.grantedTTL)).toBe(86400);

    for (const h of hs) void watch(h);
    await waitFor(() => hs.every((h) => h.view.size === 3), 'all managers to list all three leases');
    // The list: every lease as peers, then the keys it held.
    expect(hs[0].updates.slice(0, 2).map((u) => (u.kind === 'peers' ? `peers:${u.peers.length}` : `listed:${u.keys.size}`))).toEqual(['peers:3', 'listed:3']);
    // A fourth node joining shows up as an event on every watcher.
    const late = manager(prefix, netConf, '192.168.64.6');
    const l4 = await late.mgr.acquireLease(vxlanAttrs('192.168.64.6', 'c6:d2:32:6f:8f:46'), late.ctrl.signal);
    await waitFor(() => hs.every((h) => h.view.get(l4.key)?.publicIP === '192.168.64.6'), 'the fourth lease as an event');
    for (const h of [...hs, late]) await stop(h);
  });

  it('an upstream-written lease and a reservation are peers and never chosen; full range -> out of subnets', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', SubnetMin: '10.5.52.0', SubnetMax: '10.5.54.0', Backend: { Type: 'vxlan', VNI: 4096 } });
    await admin
      .put(`${prefix}/subnets/10.5.52.0-24`)
      .value('{"PublicIP":"192.168.64.3","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"c6:d2:32:6f:8f:44"}}')
      .lease((await admin.leaseClient.leaseGrant({ TTL: 86400 })).ID);
    // A reservation: no etcd lease, never expires. Plus junk that must be skipped.
    await admin.put(`${prefix}/subnets/10.5.53.0-24`).value('{"PublicIP":"192.168.64.9","BackendType":"host-gw"}');
    await admin.put(`${prefix}/subnets/not-a-subnet`).value('{}');
    await admin.put(`${prefix}/subnets/10.5.60.0-24`).value('garbage');

    const h = manager(prefix, netConf, '192.168.64.20');
    const own = await h.mgr.acquireLease(vxlanAttrs('192.168.64.20', '0e:2a:00:00:00:01'), h.ctrl.signal);
    expect(own.subnet).toBe('10.5.54.0/24');
    void watch(h);
    await waitFor(() => h.view.size === 3, 'snapshot (own lease, upstream lease, reservation; junk skipped)');
    expect(h.view.get('10.5.52.0-24')).toMatchObject({
      subnet: '10.5.52.0/24',
      publicIP: '192.168.64.3',
      backendType: 'vxlan',
      backendData: { VNI: 4096, VtepMAC: 'c6:d2:32:6f:8f:44' },
    });
    const reservation = h.view.get('10.5.53.0-24')!;
    expect(reservation).toMatchObject({ subnet: '10.5.53.0/24', publicIP: '192.168.64.9', backendType: 'host-gw', backendData: null });
    expect(h.view.has('10.5.60.0-24')).toBe(false);

    const full = manager(prefix, netConf, '192.168.64.21');
    const err = await expectCode(full.mgr.acquireLease(vxlanAttrs('192.168.64.21', '0e:2a:00:00:00:02'), full.ctrl.signal), EtcdError, 'FLANNEL_ERR_ETCD');
    expect(err.context).toEqual({ network: '10.5.0.0/16', leases: 4 });
    await stop(h);
    await stop(full);
  });

  it('a restarted node reuses its lease (same PublicIP); a new IP gets its previous subnet from subnet.env', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'host-gw' } });
    const hostgw = (ip: string) => () => Promise.resolve({ publicIP: ip, backendType: 'host-gw', backendData: null });
    const a = manager(prefix, netConf, '192.168.64.3');
    const first = await a.mgr.acquireLease(hostgw('192.168.64.3'), a.ctrl.signal);
    await stop(a);
    const again = manager(prefix, netConf, '192.168.64.3');
    const second = await again.mgr.acquireLease(hostgw('192.168.64.3'), again.ctrl.signal);
    expect(second.subnet).toBe(first.subnet);
    const raw = await admin.get(`${prefix}/subnets/${second.key}`).string();
    expect(raw).toBe('{"PublicIP":"192.168.64.3","PublicIPv6":null,"BackendType":"host-gw"}');
    const all = await admin.getAll().prefix(`${prefix}/subnets/`).keys();
    expect(all).toHaveLength(1);

    const b = manager(prefix, netConf, '192.168.64.77', { previousSubnet: '10.5.200.0/24' });
    expect((await b.mgr.acquireLease(hostgw('192.168.64.77'), b.ctrl.signal)).subnet).toBe('10.5.200.0/24');
    await stop(again);
    await stop(b);
  });

  it('deleting our key revokes the lease: watchLeases rejects with FLANNEL_ERR_LEASE_REVOKED', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } });
    const h = manager(prefix, netConf, '192.168.64.3');
    const own = await h.mgr.acquireLease(vxlanAttrs('192.168.64.3', '0e:2a:00:00:00:03'), h.ctrl.signal);
    const watching = watch(h);
    await waitFor(() => h.view.size === 1, 'snapshot');
    await admin.delete().key(`${prefix}/subnets/${own.key}`);
    const err = await watching.then(
      () => 'resolved',
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EtcdError);
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_LEASE_REVOKED', context: { key: own.key } });
    await stop(h);
  });

  // While this agent is paused, another node rewrites our key with its public IP (docs/compatibility.md §6).
  // Without a take-back nothing was logged on resume and two nodes held one subnet. Upstream's RenewLease
  // puts the own attributes back (pkg/subnet/etcd/local_manager.go -> registry updateSubnet), but only at
  // the next renewal, 23 h later.
  it('our key overwritten with another public IP: logged, and taken back after the first take-back pause under a new etcd lease', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } });
    const sink = logSink();
    const h = manager(prefix, netConf, '192.168.64.3', { log: sink.log });
    const own = await h.mgr.acquireLease(vxlanAttrs('192.168.64.3', '0e:2a:00:00:00:05'), h.ctrl.signal);
    void watch(h);
    await waitFor(() => h.view.size === 1, 'snapshot');
    const key = `${prefix}/subnets/${own.key}`;
    const ours = await admin.get(key).string();
    const firstLease = (await admin.get(key).exec()).kvs[0].lease;
    const intruder = '{"PublicIP":"192.168.64.77","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:77"}}';
    await admin.put(key).value(intruder);

    const taken = await waitFor(() => sink.entries.find((e) => e['message'] === 'own subnet lease was overwritten by another writer; taking it back'), 'the overwrite logged');
    expect(taken).toMatchObject({ level: 'error', publicIP: '192.168.64.77', ownPublicIP: '192.168.64.3' });
    await waitFor(async () => (await admin.get(key).string()) === ours || undefined, 'our value back');
    const kv = (await admin.get(key).exec()).kvs[0];
    expect(kv.lease).not.toBe(firstLease);
    expect(kv.lease).not.toBe('0');
    expect(sink.entries.filter((e) => e['message'] === REVOKED_MESSAGE)).toEqual([]);
    await stop(h);
  });

  // The same overwrite with no watch event to see it (the agent was paused and its watch missed it, or
  // resumed past it): the next renewal finds another node's value on the key, says so, and takes it
  // back, instead of putting its own value back unseen as upstream's RenewLease does.
  it('our key overwritten while no watch saw it: the renewal finds it, logs it and takes the key back', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } });
    const sink = logSink();
    const h = manager(prefix, netConf, '192.168.64.3', { log: sink.log, timings: { leaseTtlSeconds: 4, leaseRenewMarginMs: 3000, renewRetryMs: 200 } });
    const own = await h.mgr.acquireLease(vxlanAttrs('192.168.64.3', '0e:2a:00:00:00:08'), h.ctrl.signal);
    const key = `${prefix}/subnets/${own.key}`;
    const ours = await admin.get(key).string();
    const intruder = '{"PublicIP":"192.168.64.78","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:78"}}';
    await admin.put(key).value(intruder);
    const taken = await waitFor(
      () => sink.entries.find((e) => e['message'] === 'own subnet lease was overwritten by another writer; taking it back'),
      'the overwrite found at renewal',
      10_000,
    );
    expect(taken).toMatchObject({ level: 'error', publicIP: '192.168.64.78', ownPublicIP: '192.168.64.3' });
    await waitFor(async () => (await admin.get(key).string()) === ours || undefined, 'our value back', 10_000);
    expect(sink.entries.filter((e) => e['message'] === REVOKED_MESSAGE)).toEqual([]);
    await stop(h);
  });

  it('republishLease (a rebuilt vxlan network got another DR MAC): the new VtepMAC under a new lease, not taken for an intruder', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } });
    const sink = logSink();
    const h = manager(prefix, netConf, '192.168.64.3', { log: sink.log });
    const own = await h.mgr.acquireLease(vxlanAttrs('192.168.64.3', '0e:2a:00:00:00:06'), h.ctrl.signal);
    void watch(h);
    await waitFor(() => h.view.size === 1, 'snapshot');
    const key = `${prefix}/subnets/${own.key}`;
    const firstLease = (await admin.get(key).exec()).kvs[0].lease;
    const attrs = await vxlanAttrs('192.168.64.3', '0e:2a:00:00:00:66')(own.subnet);
    await h.mgr.republishLease(own, attrs, h.ctrl.signal);
    const kv = (await admin.get(key).exec()).kvs[0];
    expect(JSON.parse(kv.value.toString())).toMatchObject({ PublicIP: '192.168.64.3', BackendData: { VNI: 4096, VtepMAC: '0e:2a:00:00:00:66' } });
    expect(kv.lease).not.toBe(firstLease);
    await waitFor(() => (h.view.get(own.key)?.backendData as { VtepMAC?: string } | undefined)?.VtepMAC === '0e:2a:00:00:00:66' || undefined, 'the watch saw it');
    expect(sink.entries.filter((e) => String(e['message']).includes('overwritten'))).toEqual([]);
    await stop(h);
  });

  it('renews the lease before expiry (short test TTL), so the key outlives its first etcd lease', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } });
    const h = manager(prefix, netConf, '192.168.64.3', { timings: { leaseTtlSeconds: 4, leaseRenewMarginMs: 3000, renewRetryMs: 200 } });
    const own = await h.mgr.acquireLease(vxlanAttrs('192.168.64.3', '0e:2a:00:00:00:04'), h.ctrl.signal);
    const key = `${prefix}/subnets/${own.key}`;
    const firstLease = (await admin.get(key).exec()).kvs[0].lease;
    await waitFor(async () => (await admin.get(key).exec()).kvs[0]?.lease !== firstLease || undefined, 'a renewal with a new lease', 5000);
    // Past the first TTL: etcd says the first lease is gone (TTL -1), and the key is still there.
    await waitFor(async () => (await admin.leaseClient.leaseTimeToLive({ ID: firstLease })).TTL === '-1', 'the first etcd lease expired', 10_000);
    expect(await admin.get(key).string()).not.toBeNull();
    await stop(h);
  });

  it('etcd restarted while watching: watchers reconnect and converge', async () => {
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } });
    const hs = ['10.0.0.1', '10.0.0.2'].map((ip) => manager(prefix, netConf, ip));
    await Promise.all(hs.map((h, i) => h.mgr.acquireLease(vxlanAttrs(`10.0.0.${i + 1}`, `0e:2a:00:00:01:0${i}`), h.ctrl.signal)));
    for (const h of hs) void watch(h);
    await waitFor(() => hs.every((h) => h.view.size === 2), 'initial snapshots');
    await etcd.restart();
    const c = manager(prefix, netConf, '10.0.0.3');
    const l3 = await c.mgr.acquireLease(vxlanAttrs('10.0.0.3', '0e:2a:00:00:01:03'), c.ctrl.signal);
    await waitFor(() => hs.every((h) => h.view.has(l3.key)), 'watchers to see the lease created after the restart', 20_000);
    await admin.delete().key(`${prefix}/subnets/${l3.key}`);
    await waitFor(() => hs.every((h) => !h.view.has(l3.key) && h.view.size === 2), 'watchers to see the delete', 10_000);
    for (const h of [...hs, c]) await stop(h);
  }, 60_000);

  it('compaction while the watch is disconnected: relist, a new complete list, nothing lost', async () => {
    // The own lease is a random one of the first 100 free subnets (../../src/subnet/etcd/allocate.ts): SubnetMax
    // keeps it below the peers' keys the test writes, which it would otherwise take 2 times in 100 (the test's put
    // then overwrites the own lease, which the manager takes back, and the view never holds two).
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', SubnetMax: '10.5.50.0', Backend: { Type: 'vxlan', VNI: 4096 } });
    const proxy = await new TcpProxy(etcdPort(etcd)).start();
    try {
      const h = manager(prefix, netConf, '10.0.1.1', {}, proxy.endpoint);
      const own = await h.mgr.acquireLease(vxlanAttrs('10.0.1.1', '0e:2a:00:00:02:01'), h.ctrl.signal);
      expect(['10.5.98.0/24', '10.5.99.0/24']).not.toContain(own.subnet);
      void watch(h);
      await waitFor(() => h.view.size === 1, 'snapshot');
      const listsBefore = h.updates.filter((u) => u.kind === 'listed').length;
      proxy.disconnect();
      await admin
        .put(`${prefix}/subnets/10.5.99.0-24`)
        .value('{"PublicIP":"10.0.1.99","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"0e:2a:00:00:02:99"}}');
      await admin
        .put(`${prefix}/subnets/10.5.98.0-24`)
        .value('{"PublicIP":"10.0.1.98","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"0e:2a:00:00:02:98"}}');
      await admin.delete().key(`${prefix}/subnets/10.5.98.0-24`);
      await etcd.compact();
      proxy.restore();
      await waitFor(() => h.view.has('10.5.99.0-24') && !h.view.has('10.5.98.0-24') && h.view.size === 2, 'the relisted view', 20_000);
      expect(h.updates.filter((u) => u.kind === 'listed').length).toBeGreaterThan(listsBefore);
      await stop(h);
    } finally {
      await proxy.stop();
    }
  }, 60_000);

  it('a list, a watch event and a relist of many peers ask etcd nothing per peer (no LeaseTimeToLive call)', async () => {
    const N = 40;
    const { prefix, netConf } = await newPrefix({ Network: '10.5.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } });
    // Peers as upstream writes them: each key under an etcd lease of its own (a reservation has none).
    for (let i = 1; i <= N; i++) {
      const mac = `0e:2a:00:00:03:${i.toString(16).padStart(2, '0')}`;
      await admin
        .put(`${prefix}/subnets/10.5.${100 + i}.0-24`)
        .value(`{"PublicIP":"10.0.3.${i}","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"${mac}"}}`)
        .lease((await admin.leaseClient.leaseGrant({ TTL: 86400 })).ID);
    }
    const proxy = await new TcpProxy(etcdPort(etcd)).start();
    try {
      const h = manager(prefix, netConf, '10.0.3.200', {}, proxy.endpoint);
      await h.mgr.acquireLease(vxlanAttrs('10.0.3.200', '0e:2a:00:00:03:c8'), h.ctrl.signal);
      const before = await etcd.grpcCalls('LeaseTimeToLive');
      void watch(h);
      await waitFor(() => h.view.size === N + 1, 'the list of every peer and the own lease');
      // A watch event: one peer rewritten under a new lease (upstream's renewal).
      await admin
        .put(`${prefix}/subnets/10.5.101.0-24`)
        .value('{"PublicIP":"10.0.3.1","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"0e:2a:00:00:03:ff"}}')
        .lease((await admin.leaseClient.leaseGrant({ TTL: 86400 })).ID);
      await waitFor(() => (h.view.get('10.5.101.0-24')?.backendData as { VtepMAC?: string } | undefined)?.VtepMAC === '0e:2a:00:00:03:ff', 'the watch event');
      // A relist: the watch cut off while its revision is compacted away.
      const listsBefore = h.updates.filter((u) => u.kind === 'listed').length;
      proxy.disconnect();
      await admin
        .put(`${prefix}/subnets/10.5.199.0-24`)
        .value('{"PublicIP":"10.0.3.199","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"0e:2a:00:00:03:c7"}}')
        .lease((await admin.leaseClient.leaseGrant({ TTL: 86400 })).ID);
      await admin.delete().key(`${prefix}/subnets/10.5.102.0-24`);
      await etcd.compact(); // past the watch's next revision: the resumed watch is cancelled, a relist follows
      proxy.restore();
      const relisted = () => h.updates.filter((u) => u.kind === 'listed').length > listsBefore;
      await waitFor(() => relisted() && h.view.has('10.5.199.0-24') && !h.view.has('10.5.102.0-24'), 'the relist', 20_000);
      expect(await etcd.grpcCalls('LeaseTimeToLive')).toBe(before);
      await stop(h);
    } finally {
      await proxy.stop();
    }
  }, 60_000);
});
