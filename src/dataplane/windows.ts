// The native Windows dataplane: HNS (vmcompute.dll / computenetwork.dll) and iphlpapi through ffi-rs.
// Imported lazily by ./factory.ts, so ffi-rs (../win32/ffi.ts) loads only when this dataplane is used.
// The DLLs come from `--win32-dll-dir` when set (the Wine harness points it at stand-ins), else the
// system's; ole32.dll (CoTaskMemFree) is always the system's.
import type { Clock } from '../basics/clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import type { Metrics } from '../basics/metrics.js';
import { HnsClient } from '../hns/client.js';
import { Win32HnsTransport } from '../hns/win32-transport.js';
import { withCallTimeout } from '../hns/timed.js';
import { Win32Host } from '../host/win32-host.js';
import { componentLogger, type Logger } from '../basics/log.js';
import { MeteredRouteTable } from '../routes/metered.js';
import { Win32RouteTable } from '../routes/iphlpapi-routes.js';
import { loadWin32Native } from '../win32/ffi.js';
import type { Win32DnsNative, Win32Native, Win32ServiceNative } from '../win32/native.js';
import type { Dataplane } from './factory.js';

export interface Win32DataplaneDeps {
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** Inject the native layer (tests); default: ffi-rs on the real DLLs. */
  native?: Win32Native;
  /** The service control manager (advapi32); default: ffi-rs's, unless `native` is injected. */
  services?: Win32ServiceNative;
  /** iphlpapi's DNS settings calls; default: ffi-rs's, unless `native` is injected. */
  dns?: Win32DnsNative;
}

export async function createWin32Dataplane(config: AgentConfig, deps: Win32DataplaneDeps): Promise<Dataplane> {
  const loaded = deps.native ? undefined : await loadWin32Native(config.win32DllDir);
  const native = deps.native ?? loaded!;
  const services = deps.services ?? loaded;
  const dns = deps.dns ?? loaded;
  componentLogger(deps.log, 'dataplane').info('using the native Windows dataplane', {
    dllDir: config.win32DllDir || '(system)',
    hnsCallTimeoutSeconds: config.hnsCallTimeoutSeconds,
  });
  const hnsLog = componentLogger(deps.log, 'hns');
  return {
    hns: new HnsClient(withCallTimeout(new Win32HnsTransport(native), { timeoutMs: config.hnsCallTimeoutSeconds * 1000, clock: deps.clock, log: hnsLog, metrics: deps.metrics }), {
      log: hnsLog,
      metrics: deps.metrics,
      clock: deps.clock,
    }),
    routes: new MeteredRouteTable(new Win32RouteTable(native), deps.metrics, deps.clock),
    host: new Win32Host(native, undefined, services, deps.clock, dns),
  };
}
