// HNS/HCN failures -> HnsError with a stable code. Mirrors hcsshim hcn/hcnerrors.go (checkForErrors,
// IsNotFoundError), internal/hcserror and internal/hns/hnsfuncs.go (the v1 response envelope). The
// HCN_E_* values are winerror.h's (golang.org/x/sys/windows zerrors_windows.go, vendored by hcsshim) and
// their texts the HCN error code reference (learn.microsoft.com, virtualization/api/hcn "HCN Error Code").
// Both transports (win32 and simulated) and HnsClient build their errors here, so a failure maps to
// the same code however it arrived: negative HRESULT, v2 ErrorRecord, or a v1 `Success:false` envelope.
import { BackendError, hex, HnsError } from '../basics/errors.js';
import type { CodeOf, ErrorContext } from '../basics/errors.js';

type HnsErrorCode = CodeOf<'HnsError'>;

/** HRESULTs HNS returns (unsigned form). */
export const HRESULT = {
  S_OK: 0,
  E_ACCESSDENIED: 0x80070005,
  E_HANDLE: 0x80070006,
  E_INVALIDARG: 0x80070057,
  /** HRESULT_FROM_WIN32(ERROR_NOT_FOUND, 1168) "Element not found." */
  E_NOT_FOUND: 0x80070490,
  /** HRESULT_FROM_WIN32(ERROR_ALREADY_EXISTS, 183) (kubernetes#139519: hcnCreateLoadBalancer "... already exists. (0xb7)"). */
  E_ALREADY_EXISTS: 0x800700b7,
  E_FAIL: 0x80004005,
  HCN_E_NETWORK_NOT_FOUND: 0x803b0001,
  HCN_E_ENDPOINT_NOT_FOUND: 0x803b0002,
  /** "An adapter was not found." (microsoft/SDN#269, sig-windows-tools#291: ErrorCode 2151350278). */
  HCN_E_ADAPTER_NOT_FOUND: 0x803b0006,
  /** "An expected policy was not found." */
  HCN_E_POLICY_NOT_FOUND: 0x803b0008,
  HCN_E_INVALID_ENDPOINT: 0x803b000c,
  HCN_E_INVALID_POLICY: 0x803b000d,
  HCN_E_INVALID_POLICY_TYPE: 0x803b000e,
  HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION: 0x803b000f,
  HCN_E_NETWORK_ALREADY_EXISTS: 0x803b0010,
  HCN_E_POLICY_ALREADY_EXISTS: 0x803b0012,
  HCN_E_ENDPOINT_ALREADY_ATTACHED: 0x803b0014,
  HCN_E_REQUEST_UNSUPPORTED: 0x803b0015,
  HCN_E_INVALID_JSON: 0x803b001b,
  /** "The reference is invalid in the JSON document" (a NESTEDIPSET naming a set the network lacks). */
  HCN_E_INVALID_JSON_REFERENCE: 0x803b001c,
  HCN_E_INVALID_IP: 0x803b001e,
  HCN_E_MANAGER_STOPPED: 0x803b0020,
  /** "The specified entity cannot be removed while it still has references" (a SetPolicy an ACL rule names). */
  HCN_E_ENTITY_HAS_REFERENCES: 0x803b002c,
  HCN_E_ADDR_INVALID_OR_RESERVED: 0x803b002f,
  HCN_E_INVALID_PREFIX: 0x803b0030,
  HCN_E_INVALID_SUBNET: 0x803b0032,
} as const;

/** Windows' message text for the HRESULTs above (what HNS puts in `Error` / the ErrorRecord). */
const HRESULT_TEXT: Record<number, string> = {
  [HRESULT.E_ACCESSDENIED]: 'Access is denied.',
  [HRESULT.E_HANDLE]: 'The handle is invalid.',
  [HRESULT.E_INVALIDARG]: 'The parameter is incorrect.',
  [HRESULT.E_NOT_FOUND]: 'Element not found.',
  [HRESULT.E_ALREADY_EXISTS]: 'Cannot create a file when that file already exists.',
  [HRESULT.E_FAIL]: 'Unspecified error',
  [HRESULT.HCN_E_NETWORK_NOT_FOUND]: 'The network was not found.',
  [HRESULT.HCN_E_ENDPOINT_NOT_FOUND]: 'The endpoint was not found.',
  [HRESULT.HCN_E_ADAPTER_NOT_FOUND]: 'An adapter was not found.',
  [HRESULT.HCN_E_POLICY_NOT_FOUND]: 'An expected policy was not found.',
  [HRESULT.HCN_E_INVALID_ENDPOINT]: 'The provided endpoint configuration is invalid or missing parameters.',
  [HRESULT.HCN_E_NETWORK_ALREADY_EXISTS]: 'A network with this name already exists.',
  [HRESULT.HCN_E_POLICY_ALREADY_EXISTS]: 'Policy information already exists.',
  [HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED]: 'This endpoint is already attached to the switch.',
  [HRESULT.HCN_E_INVALID_JSON]: 'The JSON document is invalid.',
  [HRESULT.HCN_E_INVALID_JSON_REFERENCE]: 'The reference is invalid in the JSON document.',
  [HRESULT.HCN_E_ENTITY_HAS_REFERENCES]: 'The specified entity cannot be removed while it still has references.',
  [HRESULT.HCN_E_INVALID_POLICY]: 'The provided policy configuration is invalid or missing parameters.',
  [HRESULT.HCN_E_INVALID_POLICY_TYPE]: 'Invalid policy type.',
  [HRESULT.HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION]: 'This requested operation is invalid for a remote endpoint.',
  [HRESULT.HCN_E_REQUEST_UNSUPPORTED]: 'The specified request is unsupported.',
  [HRESULT.HCN_E_INVALID_IP]: 'IP address is either invalid or not part of any configured subnet(s).',
  [HRESULT.HCN_E_MANAGER_STOPPED]: 'Operation cannot be performed while service is stopping.',
  [HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED]: 'An address provided is invalid or reserved.',
  [HRESULT.HCN_E_INVALID_PREFIX]: 'The prefix provided is invalid.',
  [HRESULT.HCN_E_INVALID_SUBNET]: 'The provided subnet configuration is invalid or missing parameters.',
};

/** The text Windows prints for an HRESULT, if known. */
export function hresultText(hresult: number): string | undefined {
  return HRESULT_TEXT[hresult >>> 0];
}

const BY_HRESULT: Record<number, HnsErrorCode> = {
  [HRESULT.HCN_E_NETWORK_NOT_FOUND]: 'FLANNEL_ERR_HNS_NOT_FOUND',
  [HRESULT.HCN_E_ENDPOINT_NOT_FOUND]: 'FLANNEL_ERR_HNS_NOT_FOUND',
  [HRESULT.E_NOT_FOUND]: 'FLANNEL_ERR_HNS_NOT_FOUND',
  [HRESULT.HCN_E_POLICY_NOT_FOUND]: 'FLANNEL_ERR_HNS_NOT_FOUND',
  [HRESULT.HCN_E_ADAPTER_NOT_FOUND]: 'FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND',
  [HRESULT.HCN_E_NETWORK_ALREADY_EXISTS]: 'FLANNEL_ERR_HNS_EXISTS',
  [HRESULT.HCN_E_POLICY_ALREADY_EXISTS]: 'FLANNEL_ERR_HNS_EXISTS',
  [HRESULT.E_ALREADY_EXISTS]: 'FLANNEL_ERR_HNS_EXISTS',
  [HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED]: 'FLANNEL_ERR_HNS_ATTACHED',
  [HRESULT.E_ACCESSDENIED]: 'FLANNEL_ERR_HNS_ACCESS_DENIED',
};

/** v1 error texts (no HRESULT in the envelope): checked in order. */
const BY_TEXT: [RegExp, HnsErrorCode][] = [
  [/already attached/i, 'FLANNEL_ERR_HNS_ATTACHED'],
  [/not found|does not exist|cannot find|could not be found/i, 'FLANNEL_ERR_HNS_NOT_FOUND'],
  [/already exists/i, 'FLANNEL_ERR_HNS_EXISTS'],
  [/access is denied|access denied/i, 'FLANNEL_ERR_HNS_ACCESS_DENIED'],
];

const ADVICE: Record<string, string> = {
  FLANNEL_ERR_HNS_NOT_FOUND:
    'the object is gone (deleted outside the agent, HNS restarted, or never created); the reconcile loop re-reads HNS, recreates its own network when that is what is gone, and re-adds its policies and routes',
  FLANNEL_ERR_HNS_EXISTS: 'an object with that name or policy already exists; the agent reuses it when it matches, otherwise delete it',
  FLANNEL_ERR_HNS_ATTACHED: 'the endpoint is already attached; nothing to do',
  FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND:
    'the network adapter the HNS network is bound to does not exist on this host (renamed, removed, or a vEthernet vNIC); pass --iface naming an adapter Get-NetAdapter lists',
  FLANNEL_ERR_HNS_ACCESS_DENIED: 'run flanneld as Administrator or LocalSystem',
};

/** The HNS service itself is stopped, stopping or unreachable: only then is "is it running" the hint. */
const SERVICE_HRESULTS: ReadonlySet<number> = new Set([
  HRESULT.HCN_E_MANAGER_STOPPED,
  0x800706ba, // RPC_S_SERVER_UNAVAILABLE: the HNS service is not running
  0x800706be, // RPC_S_CALL_FAILED: the service went away during the call
  0x80070422, // ERROR_SERVICE_DISABLED
  0x8007041d, // ERROR_SERVICE_REQUEST_TIMEOUT
]);
const SERVICE_ADVICE = 'check that the HNS service is running (Get-Service hns; Restart-Service hns) and look at the Microsoft-Windows-Host-Network-Service-Admin event log';
const EVENT_LOG_ADVICE = 'look at the Microsoft-Windows-Host-Network-Service-Admin event log for what HNS objected to';

/** Which part of the request an invalid-parameter HRESULT points at (HNS names none itself). */
const REFUSED_FIELD: Record<number, string> = {
  [HRESULT.HCN_E_INVALID_PREFIX]: 'the DestinationPrefix (or another prefix)',
  [HRESULT.HCN_E_INVALID_IP]: 'an IP address (ProviderAddress, or an address outside every subnet of the network)',
  [HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED]: 'an address (ProviderAddress or the gateway: reserved, broadcast or network address)',
  [HRESULT.HCN_E_INVALID_SUBNET]: 'the subnet (AddressPrefix or its routes)',
  [HRESULT.HCN_E_INVALID_POLICY]: 'the policy Settings (a missing or malformed field)',
  [HRESULT.HCN_E_INVALID_POLICY_TYPE]: 'the policy Type (not supported by this Windows build)',
  [HRESULT.HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION]: 'the remote endpoint (the operation is not allowed on one)',
  [HRESULT.HCN_E_REQUEST_UNSUPPORTED]: 'the request (not supported by this Windows build)',
  [HRESULT.HCN_E_INVALID_JSON]: 'the JSON document',
  [HRESULT.HCN_E_INVALID_JSON_REFERENCE]: 'a reference (a set Id the network does not hold)',
  [HRESULT.HCN_E_ENTITY_HAS_REFERENCES]: 'a removal (an ACL rule or a NESTEDIPSET still names the set: remove those first)',
  [HRESULT.E_INVALIDARG]: 'one of its values (HNS does not say which; compare with a peer that works)',
};

/** The object an HNS call was about, from its context, for the hint. */
function itemOf(op: string, context: ErrorContext): string {
  const c = context as Record<string, unknown>;
  if (typeof c['policyType'] === 'string') return `the ${c['policyType']} policy`;
  if (c['policies'] !== undefined || /policies|ModifyNetwork/i.test(op)) return 'the network policy (a RemoteSubnetRoute or route for a peer)';
  if (c['endpointId'] !== undefined || c['endpoint'] !== undefined || /endpoint/i.test(op)) return 'the endpoint';
  if (c['network'] !== undefined || c['networkId'] !== undefined || /network/i.test(op)) return 'the network';
  return 'the request';
}

/**
 * The hint for one failure: the code's own (not found, exists, attached, access denied); a service
 * HRESULT, or neither an HRESULT nor any text from HNS, says to check the service; an invalid-parameter
 * HRESULT names the item and the field HNS refused; anything else, a v1 error text without an HRESULT
 * included, points at HNS's event log (the service is running: it answered).
 */
function hnsAdvice(code: HnsErrorCode, hresult: number | undefined, op: string, context: ErrorContext = {}, errorText?: string): string {
  if (ADVICE[code] !== undefined) return ADVICE[code];
  if (hresult === undefined) return errorText?.trim() ? EVENT_LOG_ADVICE : SERVICE_ADVICE;
  if (SERVICE_HRESULTS.has(hresult >>> 0)) return SERVICE_ADVICE;
  const field = REFUSED_FIELD[hresult >>> 0];
  if (field !== undefined) return `HNS refused ${field} of ${itemOf(op, context)}; fix the value (for a peer: its lease's podCIDR, public IP or VtepMAC)`;
  return EVENT_LOG_ADVICE;
}

/** Code for an HRESULT (and/or error text); HRESULT wins, text decides when the HRESULT is unknown or generic. */
function hnsErrorCode(hresult: number | undefined, errorText?: string): HnsErrorCode {
  if (hresult !== undefined) {
    const byHr = BY_HRESULT[hresult >>> 0];
    if (byHr) return byHr;
  }
  if (errorText) {
    for (const [re, code] of BY_TEXT) if (re.test(errorText)) return code;
  }
  return 'FLANNEL_ERR_HNS_CALL';
}

/**
 * Build the HnsError for a failed HNS operation. `op` names the call (`HcnCreateNetwork`,
 * `HNSCall POST /networks/`); `hresult` may be signed or unsigned; `errorText` is HNS's own text.
 */
export function hnsError(op: string, hresult: number | undefined, errorText?: string, context: ErrorContext = {}): HnsError {
  const hr = hresult === undefined ? undefined : hresult >>> 0;
  const code = hnsErrorCode(hr, errorText);
  const text = (errorText ?? (hr === undefined ? undefined : hresultText(hr)))?.trim();
  const hrPart = hr === undefined ? '' : ` with HRESULT ${hex(hr)}`;
  // HNS's own text does not say which adapter it could not find: the agent does.
  const adapter = code === 'FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND' && typeof context.adapter === 'string' ? ` [adapter "${context.adapter}"]` : '';
  const message = `HNS ${op} failed${hrPart}${text ? `: ${text}` : ''}${adapter} (${hnsAdvice(code, hr, op, context, text)})`;
  return new HnsError(code, message, { ...context, op, hresult: hr, hnsError: text || undefined });
}

export interface ErrorRecord {
  success: boolean;
  error?: string;
  /** Unsigned HRESULT from `ErrorCode`, when present. */
  hresult?: number;
}

/**
 * Parse a v2 ErrorRecord (`{"Success":false,"Error":"...","ErrorCode":2147942487}`). Empty/blank input
 * means "no error record" -> undefined. Non-JSON text is returned as the error text.
 */
export function parseErrorRecord(json: string | undefined | null): ErrorRecord | undefined {
  if (json === undefined || json === null || json.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return { success: false, error: json.trim() };
  }
  if (typeof parsed !== 'object' || parsed === null) return { success: false, error: String(parsed) };
  const rec = parsed as Record<string, unknown>;
  const out: ErrorRecord = { success: rec.Success === true };
  if (typeof rec.Error === 'string') out.error = rec.Error;
  if (typeof rec.ErrorCode === 'number') out.hresult = rec.ErrorCode >>> 0;
  return out;
}

/**
 * Unwrap a v1 HNSCall response envelope `{"Success":..,"Error":..,"Output":..}`: returns `Output`,
 * throws an HnsError on `Success:false` or on a response that is not an envelope.
 */
export function parseEnvelope<T>(op: string, responseJson: string, context: ErrorContext = {}): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(responseJson);
  } catch {
    throw hnsError(op, undefined, `HNS returned a response that is not JSON: ${responseJson.slice(0, 200)}`, context);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw hnsError(op, undefined, `HNS returned a response that is not an envelope: ${responseJson.slice(0, 200)}`, context);
  }
  const env = parsed as Record<string, unknown>;
  if (env.Success !== true) {
    const hr = typeof env.ErrorCode === 'number' ? env.ErrorCode : undefined;
    const text = typeof env.Error === 'string' && env.Error !== '' ? env.Error : 'Success:false without an error text';
    throw hnsError(op, hr, text, context);
  }
  return env.Output as T;
}

/**
 * The same error, its message naming `adapter` when HNS said it found no adapter (HCN_E_ADAPTER_NOT_FOUND
 * carries only "An adapter was not found."); any other error unchanged.
 */
export function namingAdapter(err: unknown, adapter: string | undefined): unknown {
  if (!adapter || !(err instanceof HnsError) || err.code !== 'FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND' || err.context.adapter !== undefined) return err;
  const { op, hresult: _hr, hnsError: text, ...context } = err.context;
  return hnsError(String(op ?? 'HcnCreateNetwork'), err.hresult, typeof text === 'string' ? text : undefined, { ...context, adapter });
}

/** True when `err` is an HnsError with the given code. */
function hasCode(err: unknown, code: HnsErrorCode): boolean {
  return err instanceof HnsError && err.code === code;
}

export const isHnsNotFound = (err: unknown): boolean => hasCode(err, 'FLANNEL_ERR_HNS_NOT_FOUND');

/**
 * v1 calls that name a network: `GET|DELETE /networks/<id>` and `POST /endpoints/` (the body names it).
 * HNSCall answers these with ERROR_NOT_FOUND 0x80070490 "Element not found." when the network is missing
 * (Azure/aks-engine#168 "hnsCall failed in Win32: Element not found. (0x490)", #853), where HCN says
 * HCN_E_NETWORK_NOT_FOUND.
 */
const V1_NETWORK_CALL = /^HNSCall (?:(?:GET|DELETE) \/networks\/[^/]+|POST \/endpoints\/?)$/i;

/**
 * HNS answered that the network itself is missing: HCN_E_NETWORK_NOT_FOUND; 0x80070490 from a v1 call on
 * a network (V1_NETWORK_CALL); or v1 text "Network ... not found" without an HRESULT.
 */
function isHnsNetworkNotFound(err: unknown): boolean {
  if (!(err instanceof HnsError)) return false;
  if (err.hresult !== undefined) {
    const hr = err.hresult >>> 0;
    return hr === HRESULT.HCN_E_NETWORK_NOT_FOUND || (hr === HRESULT.E_NOT_FOUND && V1_NETWORK_CALL.test(String(err.context['op'] ?? '')));
  }
  return err.code === 'FLANNEL_ERR_HNS_NOT_FOUND' && /network/i.test(String(err.context['hnsError'] ?? ''));
}

/**
 * HRESULTs by which HNS refuses what one request carries (a policy, an address) rather than the call as a
 * whole: a batch failing with one of these is split to find the refused items. Anything else (E_FAIL, a
 * stopped service, a timeout, a missing network) fails the whole write and the pass is retried.
 */
const REFUSALS: ReadonlySet<number> = new Set([
  HRESULT.E_INVALIDARG,
  HRESULT.HCN_E_INVALID_POLICY,
  HRESULT.HCN_E_INVALID_POLICY_TYPE,
  HRESULT.HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION,
  HRESULT.HCN_E_REQUEST_UNSUPPORTED,
  HRESULT.HCN_E_INVALID_JSON,
  HRESULT.HCN_E_INVALID_JSON_REFERENCE,
  HRESULT.HCN_E_ENTITY_HAS_REFERENCES,
  HRESULT.HCN_E_INVALID_IP,
  HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED,
  HRESULT.HCN_E_INVALID_PREFIX,
  HRESULT.HCN_E_INVALID_SUBNET,
]);

export function isHnsRefusal(err: unknown): boolean {
  return err instanceof HnsError && err.hresult !== undefined && REFUSALS.has(err.hresult >>> 0);
}

/** The network a driver writes to no longer exists (read found nothing, or a write said so). */
function networkGoneError(network: string, id: string): BackendError {
  return new BackendError(
    'FLANNEL_ERR_NETWORK_GONE',
    `HNS network ${network} (${id}) no longer exists (HNS restarted, or it was deleted outside flanneld); flanneld recreates it with the same subnet and reprograms every peer`,
    { network, networkId: id },
  );
}

/**
 * The network a driver writes to was renamed outside flanneld: the CNI plugins find their network by
 * name (win-overlay / win-bridge: hcn.GetNetworkByName), so under another name it is as lost to them
 * as a deleted one; the lost-network case (FLANNEL_ERR_NETWORK_GONE): recreated under its name.
 */
function networkRenamedError(network: string, id: string, nowNamed: string): BackendError {
  return new BackendError(
    'FLANNEL_ERR_NETWORK_GONE',
    `HNS network ${network} (${id}) was renamed to ${JSON.stringify(nowNamed.slice(0, 64))} outside flanneld; the CNI plugins find it by name, so flanneld recreates ${network} with the same subnet and reprograms every peer`,
    { network, networkId: id, renamed: nowNamed.slice(0, 64) },
  );
}

/** A network read by ID as a driver checks it: gone when missing, and when it no longer has its name. */
export function checkNetworkPresent<T extends { Name?: string }>(net: T | undefined, network: string, id: string): asserts net is T {
  if (!net) throw networkGoneError(network, id);
  if (network !== id && net.Name !== undefined && net.Name !== network) throw networkRenamedError(network, id, net.Name);
}

export function isNetworkGone(err: unknown): boolean {
  return (err instanceof BackendError && err.code === 'FLANNEL_ERR_NETWORK_GONE') || isHnsNetworkNotFound(err);
}

/**
 * How a failed HNS write fails, for the reconcile loop, so that it needs no HRESULT: `refused` (HNS
 * refused what the request carried; the other items of a batch may land alone), `absent` (a Remove named
 * a policy already gone; the batch is split and that policy counts as removed), `gone` (the network no
 * longer exists), else `transient` (HNS busy, down or timed out; retried with backoff).
 */
export function hnsFailure(err: unknown): 'refused' | 'absent' | 'gone' | 'transient' {
  if (isHnsRefusal(err)) return 'refused';
  if (isNetworkGone(err)) return 'gone';
  return isHnsPolicyGone(err) ? 'absent' : 'transient';
}

/** A policy write named a policy the network does not hold (a Remove of one already gone: HCN_E_POLICY_NOT_FOUND). */
export function isHnsPolicyGone(err: unknown): boolean {
  return isHnsNotFound(err) && !isHnsNetworkNotFound(err);
}
export const isHnsExists = (err: unknown): boolean => hasCode(err, 'FLANNEL_ERR_HNS_EXISTS');
export const isHnsAttached = (err: unknown): boolean => hasCode(err, 'FLANNEL_ERR_HNS_ATTACHED');
