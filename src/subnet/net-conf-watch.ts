// net-conf.json is read once, at start (as upstream flanneld does: main.go reads the network config before
// it registers the backend, and nothing re-reads it). A change to the shared kube-flannel-cfg ConfigMap
// (a new VNI, another Network) therefore reaches the running agent only at its next start, and nothing
// said so. This re-reads the file on an interval of the injected clock and, when its settings differ from
// the running ones, logs a warning and records an Event on the own Node naming what changed and that a
// restart applies it; a VNI change renames the vxlan network (`flannel.<VNI>`, flannel
// pkg/backend/vxlan/device_windows.go), so it also names kube-proxy's new --network-name (KUBE_NETWORK).
// The kubelet refreshes a mounted ConfigMap within about a minute (its sync period plus the cache TTL:
// https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically).
import type { Clock } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import type { NodeEvent, NodeEvents } from '../node-events.js';
import type { NetworkConfig } from './net-conf-types.js';

/** How often the file is read again: well inside the kubelet's own refresh of a mounted ConfigMap. */
const NET_CONF_RECHECK_MS = 30_000;

export const NET_CONF_CHANGED_REASON = 'FlannelNetConfChanged';

/** One setting that differs: what it is called in net-conf.json, the running value and the file's. */
export interface NetConfChange {
  key: string;
  running: string;
  file: string;
}

function vxlan(c: NetworkConfig) {
  return c.backend.type === 'vxlan' ? c.backend : undefined;
}

/** The settings the running agent uses that differ in `file`. Pure. */
export function netConfChanges(running: NetworkConfig, file: NetworkConfig): NetConfChange[] {
  const out: NetConfChange[] = [];
  const add = (key: string, a: string | number | undefined, b: string | number | undefined) => {
    if (a !== b) out.push({ key, running: String(a ?? '(unset)'), file: String(b ?? '(unset)') });
  };
  add('Network', running.network, file.network);
  add('SubnetLen', running.subnetLen, file.subnetLen);
  add('Backend.Type', running.backend.type, file.backend.type);
  add('Backend.VNI', vxlan(running)?.vni, vxlan(file)?.vni);
  add('Backend.Port', vxlan(running)?.port, vxlan(file)?.port);
  add('Backend.MacPrefix', vxlan(running)?.macPrefix, vxlan(file)?.macPrefix);
  add('HNS network', running.backend.name, file.backend.name);
  return out;
}

/** The Event (and log message) for `changes`. Pure. */
function netConfChangedEvent(path: string, running: NetworkConfig, file: NetworkConfig, changes: readonly NetConfChange[]): NodeEvent {
  const what = changes.map((c) => `${c.key} ${c.running} -> ${c.file}`).join(', ');
  const renamed = running.backend.name !== file.backend.name;
  const proxy = renamed ? `; the network is then ${file.backend.name}: kube-proxy's --network-name (KUBE_NETWORK) must become ${file.backend.name}` : '';
  return {
    type: 'Warning',
    reason: NET_CONF_CHANGED_REASON,
    message: `${path} changed (${what}); this agent keeps running with the old settings: restart flanneld on this node to apply them${proxy}`,
  };
}

export interface NetConfWatchOptions {
  path: string;
  /** Reads and parses the file (readNetConf); throws on a missing or invalid file. */
  read: (path: string) => NetworkConfig;
  /** The settings the agent runs with. */
  running: NetworkConfig;
  clock: Clock;
  intervalMs?: number;
  log: Logger;
  events: NodeEvents;
  signal: AbortSignal;
}

/** Re-read the file until `signal` aborts; say once per distinct change (and once per distinct read error). */
export async function watchNetConf(o: NetConfWatchOptions): Promise<void> {
  const interval = o.intervalMs ?? NET_CONF_RECHECK_MS;
  let said = '';
  for (;;) {
    try {
      await o.clock.sleep(interval, o.signal);
    } catch (err) {
      if (o.signal.aborted) return;
      throw err;
    }
    let file: NetworkConfig;
    try {
      file = o.read(o.path);
    } catch (err) {
      const key = `error:${errorMessage(err)}`;
      if (key !== said) o.log.warn('cannot re-read net-conf.json; the agent keeps its settings, and would not start with this file', { path: o.path, error: errorMessage(err) });
      said = key;
      continue;
    }
    const changes = netConfChanges(o.running, file);
    const key = changes.map((c) => `${c.key}=${c.file}`).join(',');
    if (key === said) continue;
    said = key;
    if (changes.length === 0) {
      o.log.info('net-conf.json is back to the settings this agent runs with', { path: o.path });
      continue;
    }
    const event = netConfChangedEvent(o.path, o.running, file, changes);
    o.log.warn('net-conf.json changed; a restart applies it', {
      path: o.path,
      changes: changes.map((c) => `${c.key} ${c.running} -> ${c.file}`).join(', '),
      network: o.running.backend.name,
      newNetwork: file.backend.name,
    });
    o.events.record(event);
  }
}
