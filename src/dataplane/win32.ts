// The native Windows dataplane: HNS (vmcompute.dll / computenetwork.dll) and iphlpapi through ffi-rs.
// Placeholder until the win32 transports land (issue 3): fails with a clear, coded error.
import type { Clock } from '../clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import { FlannelError } from '../errors.js';
import type { Metrics } from '../health/metrics.js';
import type { Logger } from '../log.js';
import type { Dataplane } from './factory.js';

export async function createWin32Dataplane(config: AgentConfig, _deps: { log: Logger; metrics: Metrics; clock: Clock }): Promise<Dataplane> {
  throw new FlannelError('FLANNEL_ERR_UNSUPPORTED', 'the native Windows dataplane is not in this build yet; run with --dataplane simulated', {
    dataplane: config.dataplane,
  });
}
