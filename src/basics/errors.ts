// Error classes with stable codes, one class per failure family (the pattern of undici's
// lib/core/errors.js: each class fixes its own codes), all made by one generic base (`family` below). Tests assert `code` (and class) first; a few
// dozen also check message text where the text is the contract (a hint naming the fix). Messages say what went wrong and what to do; `context` carries the facts (network
// name, HRESULT, ...). docs/errors.md documents every code under its family.

/** Every family and the codes it may carry; the types below and the docs check derive from this. */
export const ERROR_FAMILIES = {
  /** Bad command line flag or value (exit 2). */
  FlagError: ['FLANNEL_ERR_FLAG'],
  /** Bad configuration from flags/env/env-file, or a bad --kube-annotation-prefix. */
  ConfigError: [
    'FLANNEL_ERR_CONFIG',
    'FLANNEL_ERR_ENV_FILE',
    'FLANNEL_ERR_ANNOTATION_PREFIX',
    'FLANNEL_ERR_INPUT_FILE',
    'FLANNEL_ERR_CLUSTER_CONFIG',
    'FLANNEL_ERR_CONTAINERD_CONFIG',
  ],
  /** net-conf.json (or the etcd network config) missing or invalid. */
  NetConfError: ['FLANNEL_ERR_NET_CONF'],
  /** subnet.env unreadable, malformed or not writable. */
  SubnetEnvError: ['FLANNEL_ERR_SUBNET_ENV'],
  /** install-cni: a source not readable, too large or too slow, a hash mismatch, a bad archive or entry, a failed write. */
  CniInstallError: [
    'FLANNEL_ERR_CNI_SOURCE',
    'FLANNEL_ERR_CNI_TOO_LARGE',
    'FLANNEL_ERR_CNI_TIMEOUT',
    'FLANNEL_ERR_CNI_HASH',
    'FLANNEL_ERR_CNI_ARCHIVE',
    'FLANNEL_ERR_CNI_ENTRY',
    'FLANNEL_ERR_CNI_NOT_PE',
    'FLANNEL_ERR_CNI_INSTALL',
    'FLANNEL_ERR_CNI_CONF_ORDER',
  ],
  /** `flanneld status`: the status port's answer too large or too slow. */
  StatusError: ['FLANNEL_ERR_STATUS_TOO_LARGE', 'FLANNEL_ERR_STATUS_TIMEOUT'],
  /** Kubernetes: kubeconfig, a failed API call as the caller sees it, the own Node. */
  KubeError: ['FLANNEL_ERR_KUBE', 'FLANNEL_ERR_KUBE_INSECURE', 'FLANNEL_ERR_KUBE_LIST', 'FLANNEL_ERR_KUBE_AUTH', 'FLANNEL_ERR_NODE', 'FLANNEL_ERR_SUBNET_CONTESTED'],
  /** A non-2xx answer of the API server (before the caller maps it to a KubeError). */
  KubeApiError: ['FLANNEL_ERR_KUBE_API'],
  /** An API request without an answer within its deadline, or a watch gone silent. */
  KubeTimeoutError: ['FLANNEL_ERR_KUBE_TIMEOUT'],
  /** A watch stream the agent refuses to read on (a line past the bound), or one that broke mid-way. */
  KubeWatchError: ['FLANNEL_ERR_KUBE_WATCH_LINE', 'FLANNEL_ERR_KUBE_WATCH_BROKEN'],
  /** A 2xx answer of the API server the agent cannot use: larger than its bound, not JSON, not the shape asked for. */
  KubeAnswerError: ['FLANNEL_ERR_KUBE_ANSWER'],
  /** etcd subnet manager: etcd failing, out of subnets, the own lease revoked, the peer list-watch failing. */
  EtcdError: ['FLANNEL_ERR_ETCD', 'FLANNEL_ERR_LEASE_REVOKED', 'FLANNEL_ERR_ETCD_WATCH'],
  /** An HNS (v1 HNSCall or v2 Hcn*) call failed, or HNS is too old. */
  HnsError: [
    'FLANNEL_ERR_HNS_CALL',
    'FLANNEL_ERR_HNS_NOT_FOUND',
    'FLANNEL_ERR_HNS_EXISTS',
    'FLANNEL_ERR_HNS_ATTACHED',
    'FLANNEL_ERR_HNS_ACCESS_DENIED',
    'FLANNEL_ERR_HNS_VERSION',
    'FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND',
  ],
  /** A route table call failed. */
  RouteError: ['FLANNEL_ERR_ROUTE'],
  /** The host: interfaces, addresses, the node's agent lock, the health port. */
  HostError: ['FLANNEL_ERR_HOST', 'FLANNEL_ERR_AGENT_LOCK', 'FLANNEL_ERR_HEALTHZ_LISTEN', 'FLANNEL_ERR_SERVICE'],
  /** A backend could not register its network, or the network disappeared while running. */
  BackendError: ['FLANNEL_ERR_BACKEND', 'FLANNEL_ERR_NETWORK_GONE', 'FLANNEL_ERR_NETWORK_CLASH'],
  /** The simulated dataplane's state file. */
  DataplaneStateError: ['FLANNEL_ERR_DATAPLANE_STATE'],
  /** The simulated node cannot say whether HNS passes a packet (no public source settles that case). */
  AclEvaluationError: ['FLANNEL_ERR_ACL_UNSETTLED'],
  /** A feature this agent does not support (on Windows, or at all). */
  UnsupportedError: ['FLANNEL_ERR_UNSUPPORTED'],
} as const;

type Families = typeof ERROR_FAMILIES;
export type ErrorFamily = keyof Families;
/** The codes of one family. */
export type CodeOf<F extends ErrorFamily> = Families[F][number];
export type ErrorCode = CodeOf<ErrorFamily>;

export type ErrorContext = Record<string, string | number | boolean | undefined>;

/** The base of every family; never thrown itself (abstract). */
export abstract class FlannelError extends Error {
  readonly code: ErrorCode;
  readonly context: ErrorContext;
  protected constructor(code: ErrorCode, message: string, context: ErrorContext = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
    this.context = context;
  }
}

/**
 * The one pattern of every family: a FlannelError whose `code` is one of its family's codes, built as
 * `new XError(code, message, context?, options?)`. Each family below is one line; the four that carry a
 * field callers read (`hresult`, `status`, `statusCode`/`body`, `timeoutMs`) take it from `context` (or,
 * for `body`, from `options`) with the same constructor.
 */
function family<F extends ErrorFamily>(_family: F) {
  abstract class Family extends FlannelError {
    declare readonly code: CodeOf<F>;
    constructor(code: CodeOf<F>, message: string, context: ErrorContext = {}, options?: ErrorOptions) {
      super(code, message, context, options);
    }
  }
  return Family;
}

/** Bad command line input: main prints one line and exits with code 2. */
export class FlagError extends family('FlagError') {}
export class ConfigError extends family('ConfigError') {}
export class NetConfError extends family('NetConfError') {}
export class SubnetEnvError extends family('SubnetEnvError') {}
export class CniInstallError extends family('CniInstallError') {}
/** `flanneld status` refused what the status port answered (too large, too slow). */
export class StatusError extends family('StatusError') {}
export class KubeError extends family('KubeError') {}
/** A watch stream refused (a line longer than any Node) or broken mid-way; the watch round ends. */
export class KubeWatchError extends family('KubeWatchError') {}
/** A 2xx answer the agent cannot use (too large, not JSON, not the shape asked for); retried like a network error. */
export class KubeAnswerError extends family('KubeAnswerError') {}
export class EtcdError extends family('EtcdError') {}
export class HostError extends family('HostError') {}
export class BackendError extends family('BackendError') {}
export class DataplaneStateError extends family('DataplaneStateError') {}
/** The simulator's packet evaluator (src/simulator/acl.ts) refused to answer for a case no source settles. */
export class AclEvaluationError extends family('AclEvaluationError') {}
export class UnsupportedError extends family('UnsupportedError') {}

/** A non-2xx answer of the API server: `context.status` is its HTTP status, `options.body` its (bounded) text. */
export class KubeApiError extends family('KubeApiError') {
  readonly statusCode: number;
  /** Usually a Status; kept out of `context` so that it is never logged as a field. */
  readonly body: string;
  /** The answer's `Retry-After` in ms (429 and 5xx only, as client-go reads it), undefined without one. */
  readonly retryAfterMs: number | undefined;
  constructor(code: CodeOf<'KubeApiError'>, message: string, context: ErrorContext & { status: number }, options?: ErrorOptions & { body?: string; retryAfterMs?: number }) {
    super(code, message, context, options);
    this.statusCode = context.status;
    this.body = options?.body ?? '';
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** A request that did not complete within its deadline (or a watch that went silent): `context.timeoutMs`. */
export class KubeTimeoutError extends family('KubeTimeoutError') {
  readonly timeoutMs: number;
  constructor(code: CodeOf<'KubeTimeoutError'>, message: string, context: ErrorContext & { timeoutMs: number }, options?: ErrorOptions) {
    super(code, message, context, options);
    this.timeoutMs = context.timeoutMs;
  }
}

/** An HNS (v1 HNSCall or v2 Hcn*) call failed; `hresult` is the unsigned HRESULT when known (hex in `context`). */
export class HnsError extends family('HnsError') {
  readonly hresult: number | undefined;
  constructor(code: CodeOf<'HnsError'>, message: string, context: ErrorContext & { hresult?: number } = {}, options?: ErrorOptions) {
    super(code, message, { ...context, hresult: context.hresult === undefined ? undefined : hex(context.hresult) }, options);
    this.hresult = context.hresult;
  }
}

/** A route table call failed; `status` is the Win32 status when known. */
export class RouteError extends family('RouteError') {
  readonly status: number | undefined;
  constructor(code: CodeOf<'RouteError'>, message: string, context: ErrorContext & { status?: number } = {}, options?: ErrorOptions) {
    super(code, message, context, options);
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
