// The etcd subnet manager over TLS (mTLS: --etcd-cafile/--etcd-certfile/--etcd-keyfile) and with etcd
// authentication (--etcd-username/--etcd-password) against a real etcd (Debian's etcd-server). The PKI
// is throwaway, made with openssl per suite.
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EtcdAuthenticationFailedError, GRPCInvalidArgumentError, GRPCUnavailableError } from 'etcd3';
import type { Etcd3 } from 'etcd3';
import type { AgentConfig } from '../../src/config/agent-config.js';
import { parseConfig } from '../../src/config/parse.js';
import { ConfigError, EtcdError } from '../../src/basics/errors.js';
import type { Lease } from '../../src/subnet/lease.js';
import { createEtcdSubnetManager, fetchEtcdNetworkConfig } from '../../src/subnet/etcd/factory.js';
import { LOG } from '../support/cluster.js';
import { describeEtcd, EtcdServer, issueCert, makeTestCa } from '../support/etcd.js';
import { expectCode } from '../support/errors.js';
import { freePort } from '../support/free-port.js';
import { logSink } from '../support/log-sink.js';
import type { TestCa, TestCert } from '../support/etcd.js';

const CONF = { Network: '10.6.0.0/16', Backend: { Type: 'host-gw' } };
/** Short waits so failures surface in well under the per-test budget. */
const FAST = { waitTimeoutMs: 1500, backoffBaseMs: 50, backoffCapMs: 200 };
const TIMINGS = { apiRetryTimeoutMs: 1500, backoffBaseMs: 50, backoffCapMs: 200 };

let seq = 0;

/** An AgentConfig from flanneld flags, as the agent builds it; files under `home`. */
function agentConfig(home: string, flags: string[]): AgentConfig {
  const dir = join(home, `node${++seq}`);
  mkdirSync(dir, { recursive: true });
  const parsed = parseConfig([...flags, '--dataplane=simulated', `--subnet-file=${join(dir, 'subnet.env')}`, '--iface=10.0.0.2'], {}, { platform: 'linux' });
  if (parsed.kind !== 'run') throw new Error('expected a run config');
  return parsed.config;
}

/** Read `<prefix>/config` and acquire a lease the way the agent does; aborting `ctrl` closes the client. */
async function acquire(config: AgentConfig, ctrl: AbortController, publicIP = '10.0.0.2'): Promise<Lease> {
  const netConf = await fetchEtcdNetworkConfig(config, { log: LOG, signal: ctrl.signal, ...FAST });
  const mgr = createEtcdSubnetManager(config, { netConf, publicIP, log: LOG, timings: TIMINGS });
  return mgr.acquireLease(() => Promise.resolve({ publicIP, backendType: 'host-gw', backendData: null }), ctrl.signal);
}

describeEtcd(
  'etcd over mTLS (real etcd, throwaway PKI)',
  () => {
    let dir: string;
    let ca: TestCa;
    let client: TestCert;
    let otherCa: TestCa;
    let otherClient: TestCert;
    let etcd: EtcdServer;
    let admin: Etcd3;
    const ctrls: AbortController[] = [];
    const prefix = '/tls/network';

    function controller(): AbortController {
      const c = new AbortController();
      ctrls.push(c);
      return c;
    }

    function tlsFlags(cafile: string, cert: TestCert | undefined): string[] {
      return [
        `--etcd-endpoints=${etcd.endpoint}`,
        `--etcd-prefix=${prefix}`,
        `--etcd-cafile=${cafile}`,
        ...(cert ? [`--etcd-certfile=${cert.certFile}`, `--etcd-keyfile=${cert.keyFile}`] : []),
      ];
    }

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'flanneld-etcd-tls-'));
      ca = makeTestCa(dir, 'ca');
      const server = issueCert(ca, dir, 'server', 'server');
      client = issueCert(ca, dir, 'client', 'client');
      otherCa = makeTestCa(dir, 'other-ca');
      otherClient = issueCert(otherCa, dir, 'other-client', 'client');
      etcd = new EtcdServer({ tls: { caFile: ca.certFile, server, client } });
      await etcd.start();
      expect(etcd.endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      admin = etcd.client();
      await admin.put(`${prefix}/config`).value(JSON.stringify(CONF));
    }, 30_000);

    afterAll(async () => {
      for (const c of ctrls) c.abort(new Error('test end'));
      await etcd?.destroy();
      if (dir) rmSync(dir, { recursive: true, force: true });
    }, 30_000);

    it('with --etcd-cafile/--etcd-certfile/--etcd-keyfile the manager reads the config and acquires a lease', async () => {
      const ctrl = controller();
      const lease = await acquire(agentConfig(dir, tlsFlags(ca.certFile, client)), ctrl);
      expect(lease.subnet).toMatch(/^10\.6\.\d+\.0\/24$/);
      const raw = await admin.get(`${prefix}/subnets/${lease.key}`).string();
      expect(raw).toBe('{"PublicIP":"10.0.0.2","PublicIPv6":null,"BackendType":"host-gw"}');
      ctrl.abort(new Error('done'));
    }, 20_000);

    it('a server certificate from another CA fails fast with FLANNEL_ERR_ETCD naming the certificate problem', async () => {
      const config = agentConfig(dir, tlsFlags(otherCa.certFile, client));
      const ctrl = controller();
      const err = await expectCode(fetchEtcdNetworkConfig(config, { log: LOG, signal: ctrl.signal, ...FAST }), EtcdError, 'FLANNEL_ERR_ETCD');
      expect(err.context).toEqual({ key: `${prefix}/config` });
      // etcd3's own diagnosis is kept as the cause (and in the message).
      expect(err.cause).toBeInstanceOf(GRPCUnavailableError);
      expect((err.cause as Error).message).toMatch(/certificate/i);

      // The manager's own retry (acquireLease) gives up after apiRetryTimeoutMs with the same diagnosis.
      const netConf = await fetchEtcdNetworkConfig(agentConfig(dir, tlsFlags(ca.certFile, client)), { log: LOG, signal: ctrl.signal, ...FAST });
      const mgr = createEtcdSubnetManager(config, { netConf, publicIP: '10.0.0.9', log: LOG, timings: TIMINGS });
      // (The test's own deadline, 20 s, is what "gives up" is held to: no wall-clock bound here.)
      const err2 = await expectCode(
        mgr.acquireLease(() => Promise.resolve({ publicIP: '10.0.0.9', backendType: 'host-gw', backendData: null }), ctrl.signal),
        EtcdError,
        'FLANNEL_ERR_ETCD',
      );
      expect(err2.cause).toBeInstanceOf(GRPCUnavailableError);
      expect((err2.cause as Error).message).toMatch(/certificate/i);
      mgr.close();
      ctrl.abort(new Error('done'));
    }, 20_000);

    it('etcd rejects a client certificate it does not trust, and a client without one: FLANNEL_ERR_ETCD', async () => {
      for (const cert of [otherClient, undefined]) {
        const ctrl = controller();
        const err = await expectCode(
          fetchEtcdNetworkConfig(agentConfig(dir, tlsFlags(ca.certFile, cert)), { log: LOG, signal: ctrl.signal, ...FAST }),
          EtcdError,
          'FLANNEL_ERR_ETCD',
        );
        expect(err.context).toEqual({ key: `${prefix}/config` });
        expect(err.cause).toBeInstanceOf(GRPCUnavailableError);
        expect((err.cause as Error).message).toMatch(/bad certificate/i);
        ctrl.abort(new Error('done'));
      }
    }, 20_000);
  },
  { openssl: true },
);

describeEtcd('etcd with authentication (real etcd)', () => {
  let dir: string;
  let etcd: EtcdServer;
  let admin: Etcd3;
  const ctrls: AbortController[] = [];
  const prefix = '/auth/network';

  function controller(): AbortController {
    const c = new AbortController();
    ctrls.push(c);
    return c;
  }

  function authFlags(user: string, password: string): string[] {
    return [`--etcd-endpoints=${etcd.endpoint}`, `--etcd-prefix=${prefix}`, `--etcd-username=${user}`, `--etcd-password=${password}`];
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flanneld-etcd-auth-'));
    etcd = new EtcdServer();
    await etcd.start();
    await etcd.client().put(`${prefix}/config`).value(JSON.stringify(CONF));
    await etcd.enableAuth('root-pw', [{ name: 'flannel', password: 'flannel-pw', readwritePrefix: `${prefix}/` }]);
    admin = etcd.client();
  }, 30_000);

  afterAll(async () => {
    for (const c of ctrls) c.abort(new Error('test end'));
    await etcd?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 30_000);

  it('with --etcd-username/--etcd-password (a user allowed only <prefix>/) the manager acquires a lease', async () => {
    const ctrl = controller();
    const lease = await acquire(agentConfig(dir, authFlags('flannel', 'flannel-pw')), ctrl, '10.0.0.3');
    expect(lease.subnet).toMatch(/^10\.6\.\d+\.0\/24$/);
    const raw = await admin.get(`${prefix}/subnets/${lease.key}`).string();
    expect(raw).toBe('{"PublicIP":"10.0.0.3","PublicIPv6":null,"BackendType":"host-gw"}');
    ctrl.abort(new Error('done'));
  }, 20_000);

  it('a wrong password fails fast with FLANNEL_ERR_ETCD naming authentication', async () => {
    const config = agentConfig(dir, authFlags('flannel', 'wrong'));
    const ctrl = controller();
    const err = await expectCode(fetchEtcdNetworkConfig(config, { log: LOG, signal: ctrl.signal, ...FAST }), EtcdError, 'FLANNEL_ERR_ETCD');
    expect(err.cause).toBeInstanceOf(EtcdAuthenticationFailedError);

    const netConf = await fetchEtcdNetworkConfig(agentConfig(dir, authFlags('flannel', 'flannel-pw')), { log: LOG, signal: ctrl.signal, ...FAST });
    const mgr = createEtcdSubnetManager(config, { netConf, publicIP: '10.0.0.9', log: LOG, timings: { ...TIMINGS, apiRetryTimeoutMs: 60_000 } });
    // An authentication error is not retried: no wait for apiRetryTimeoutMs (60 s, past the test's 20 s deadline).
    const err2 = await expectCode(
      mgr.acquireLease(() => Promise.resolve({ publicIP: '10.0.0.9', backendType: 'host-gw', backendData: null }), ctrl.signal),
      EtcdError,
      'FLANNEL_ERR_ETCD',
    );
    expect(err2.cause).toBeInstanceOf(EtcdAuthenticationFailedError);
    mgr.close();
    ctrl.abort(new Error('done'));
  }, 20_000);

  it('user:password in --etcd-endpoints become the etcd user; the password never reaches the log', async () => {
    // gRPC named such a target `dns:flannel:<password>@host:port` in every retry line, which the URL
    // redaction did not recognise. A dead endpoint first: its failures are logged while the agent waits.
    const { log, entries } = logSink();
    const dead = `http://flannel:flannel-pw@127.0.0.1:${await freePort()}`;
    const ctrl = controller();
    await expectCode(
      fetchEtcdNetworkConfig(agentConfig(dir, [`--etcd-endpoints=${dead}`, `--etcd-prefix=${prefix}`]), { log, signal: ctrl.signal, ...FAST, logIntervalMs: 0 }),
      EtcdError,
      'FLANNEL_ERR_ETCD',
    );
    expect(entries.some((e) => e['message'] === "Couldn't fetch network config, waiting")).toBe(true);
    const live = etcd.endpoint.replace('http://', 'http://flannel:flannel-pw@');
    const config = agentConfig(dir, [`--etcd-endpoints=${live}`, `--etcd-prefix=${prefix}`]);
    const netConf = await fetchEtcdNetworkConfig(config, { log, signal: ctrl.signal, ...FAST });
    expect(netConf.network).toBe(CONF.Network);
    const mgr = createEtcdSubnetManager(config, { netConf, publicIP: '10.0.0.4', log, timings: TIMINGS });
    const lease = await mgr.acquireLease(() => Promise.resolve({ publicIP: '10.0.0.4', backendType: 'host-gw', backendData: null }), ctrl.signal);
    expect(lease.subnet).toMatch(/^10\.6\.\d+\.0\/24$/);
    mgr.close();
    ctrl.abort(new Error('done'));
    const text = JSON.stringify(entries);
    expect(text).toContain('http://***@127.0.0.1');
    expect(text).not.toContain('flannel-pw');
  }, 20_000);

  it('endpoint credentials given twice or half are refused with FLANNEL_ERR_CONFIG', async () => {
    const ctrl = controller();
    const url = (info: string) => etcd.endpoint.replace('http://', `http://${info}@`);
    for (const flags of [
      [`--etcd-endpoints=${url('flannel:flannel-pw')}`, '--etcd-username=flannel', '--etcd-password=flannel-pw'],
      [`--etcd-endpoints=${url('flannel:flannel-pw')},${url('root:root-pw')}`],
      [`--etcd-endpoints=${url('flannel')}`],
    ]) {
      const err = await expectCode(
        fetchEtcdNetworkConfig(agentConfig(dir, [...flags, `--etcd-prefix=${prefix}`]), { log: LOG, signal: ctrl.signal, ...FAST }),
        ConfigError,
        'FLANNEL_ERR_CONFIG',
      );
      expect(err.message).not.toContain('-pw');
    }
    ctrl.abort(new Error('done'));
  }, 20_000);

  it('without credentials etcd refuses: FLANNEL_ERR_ETCD', async () => {
    const ctrl = controller();
    const err = await expectCode(
      fetchEtcdNetworkConfig(agentConfig(dir, [`--etcd-endpoints=${etcd.endpoint}`, `--etcd-prefix=${prefix}`]), { log: LOG, signal: ctrl.signal, ...FAST }),
      EtcdError,
      'FLANNEL_ERR_ETCD',
    );
    expect(err.cause).toBeInstanceOf(GRPCInvalidArgumentError);
    expect((err.cause as Error).message).toContain('user name is empty');
    ctrl.abort(new Error('done'));
  }, 20_000);
});
