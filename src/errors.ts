// Error classes with stable codes. Tests assert `code`, never the message text.
// Messages say what went wrong and what to do; `context` carries the facts (network name, HRESULT, ...).

export type ErrorCode =
  | 'FLANNEL_ERR_FLAG' // bad command line flag or value (exit 2)
  | 'FLANNEL_ERR_CONFIG' // bad configuration assembled from flags/env/env-file
  | 'FLANNEL_ERR_NET_CONF' // net-conf.json missing or invalid
  | 'FLANNEL_ERR_CNI_SOURCE' // install-cni: a plugin archive could not be downloaded or read
  | 'FLANNEL_ERR_CNI_HASH' // install-cni: a plugin archive's SHA-256 is not the one given
  | 'FLANNEL_ERR_CNI_ARCHIVE' // install-cni: corrupt archive, or a plugin missing or given twice
  | 'FLANNEL_ERR_CNI_INSTALL' // install-cni: the plugins could not be written into the bin directory
  | 'FLANNEL_ERR_ANNOTATION_PREFIX' // --kube-annotation-prefix invalid
  | 'FLANNEL_ERR_ENV_FILE' // --env-file unreadable or malformed
  | 'FLANNEL_ERR_SUBNET_ENV' // subnet.env unreadable, malformed or not writable
  | 'FLANNEL_ERR_KUBE' // kubernetes API failure (kubeconfig, API error)
  | 'FLANNEL_ERR_KUBE_INSECURE' // credentials would be sent to the API server over plain http://
  | 'FLANNEL_ERR_NODE' // own node missing / not ready / podCIDR problems
  | 'FLANNEL_ERR_LEASE' // peer lease rejected (validation)
  | 'FLANNEL_ERR_HNS_CALL' // HNS/HCN call failed (other)
  | 'FLANNEL_ERR_HNS_NOT_FOUND' // HNS object not found
  | 'FLANNEL_ERR_HNS_EXISTS' // HNS object already exists
  | 'FLANNEL_ERR_HNS_ATTACHED' // HNS endpoint already attached
  | 'FLANNEL_ERR_HNS_ACCESS_DENIED' // HNS access denied
  | 'FLANNEL_ERR_HNS_VERSION' // HNS too old for the requested feature
  | 'FLANNEL_ERR_ROUTE' // route table call failed
  | 'FLANNEL_ERR_HOST' // host interface/forwarding problem
  | 'FLANNEL_ERR_BACKEND' // backend could not register the network
  | 'FLANNEL_ERR_NETWORK_GONE' // the backend's HNS network disappeared while the agent ran (it is rebuilt)
  | 'FLANNEL_ERR_DATAPLANE_STATE' // simulated dataplane state file problem
  | 'FLANNEL_ERR_ETCD' // etcd subnet manager: etcd unreachable / failing, config missing, out of subnets
  | 'FLANNEL_ERR_LEASE_REVOKED' // the own etcd lease was deleted: the daemon shuts down
  | 'FLANNEL_ERR_AGENT_LOCK' // another agent holds the node's lock (flanneld.lock beside subnet.env)
  | 'FLANNEL_ERR_UNSUPPORTED'; // feature not supported on Windows

export type ErrorContext = Record<string, string | number | boolean | undefined>;

export class FlannelError extends Error {
  readonly code: ErrorCode;
  readonly context: ErrorContext;
  constructor(code: ErrorCode, message: string, context: ErrorContext = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.context = context;
  }
}

/** Bad command line input: main prints one line and exits with code 2. */
export class FlagError extends FlannelError {
  constructor(message: string, context: ErrorContext = {}) {
    super('FLANNEL_ERR_FLAG', message, context);
  }
}

export class ConfigError extends FlannelError {}

/** An HNS (v1 HNSCall or v2 Hcn*) call failed; `hresult` is the unsigned HRESULT when known. */
export class HnsError extends FlannelError {
  readonly hresult: number | undefined;
  constructor(code: ErrorCode, message: string, context: ErrorContext & { hresult?: number } = {}) {
    super(code, message, { ...context, hresult: context.hresult === undefined ? undefined : hex(context.hresult) });
    this.hresult = context.hresult;
  }
}

export class RouteError extends FlannelError {
  readonly status: number | undefined;
  constructor(message: string, context: ErrorContext & { status?: number } = {}) {
    super('FLANNEL_ERR_ROUTE', message, context);
    this.status = context.status;
  }
}

export function hex(hr: number): string {
  return '0x' + (hr >>> 0).toString(16).toUpperCase().padStart(8, '0');
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function isFlannelError(err: unknown, code?: ErrorCode): err is FlannelError {
  return err instanceof FlannelError && (code === undefined || err.code === code);
}
