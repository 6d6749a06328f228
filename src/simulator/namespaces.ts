// HCN namespaces of the simulated node (a pod's network compartment): created by the container runtime
// before CNI ADD, an endpoint added to one by the CNI plugin, removed on DEL. Pure functions on the state
// document, and SimulatedHcnNamespaces: computenetwork.dll!Hcn*Namespace over the model, the raw JSON calls
// hcsshim makes in hcn/hcnnamespace.go (hcnEnumerateNamespaces, hcnCreateNamespace, hcnOpenNamespace,
// hcnModifyNamespace, hcnQueryNamespaceProperties, hcnDeleteNamespace, hcnCloseNamespace). The agent never
// calls them: the CNI plugins do (win-overlay / win-bridge attach a pod's endpoint to its namespace), and
// the Windows test harness serves them to the real plugins through the stand-in DLL. Shapes follow
// hcsshim hcn/hcnnamespace.go: HostComputeNamespace {ID, NamespaceId, Type, Resources, SchemaVersion}; a resource is {Type: "Endpoint"|"Container", Data: {ID}}; ModifyNamespace
// takes {ResourceType, RequestType: "Add"|"Remove", Settings: {EndpointId}} (AddNamespaceEndpoint,
// RemoveNamespaceEndpoint). The endpoint's own HostComputeNamespace names the namespace it is in
// (hcnendpoint.go), which is what the plugins' DEL reads (containernetworking/plugins pkg/hns
// endpoint_windows.go RemoveHcnEndpoint), so the model keeps membership on the endpoint and renders a
// namespace's Resources from it. A missing namespace is 0x80070490 "Element not found" (ERROR_NOT_FOUND),
// which hcsshim's hcn/hcnerrors.go IsElementNotFoundError matches.
import type { ErrorContext } from '../basics/errors.js';
import { HRESULT, hnsError, hresultText } from '../hns/errors.js';
import { HCN_SCHEMA_V2, sameId, type HcnEndpoint } from '../hns/schema.js';
import { filterMatches, parseHcnJson } from './hns.js';
import type { SimulatedDataplane } from './model.js';
import { ZERO_GUID, type SimIds } from './objects.js';
import type { KeyedState } from './keyed.js';

/** A namespace as the state file stores it (Resources are rendered from the endpoints, never stored). */
export interface SimNamespace {
  ID: string;
  NamespaceId: number;
  Type: string;
  SchemaVersion: { Major: number; Minor: number };
}

/** What HcnQueryNamespaceProperties returns. */
export interface HcnNamespaceProperties extends SimNamespace {
  Resources: { Type: 'Endpoint'; Data: { ID: string } }[];
}

/** hcsshim NamespaceType values. */
const NAMESPACE_TYPES = new Set(['Host', 'HostDefault', 'Guest', 'GuestDefault']);

/** A missing namespace (ERROR_NOT_FOUND), as the HCN calls and the simulator's own lookups report it. */
const namespaceNotFound = (op: string, id: string) => hnsError(op, HRESULT.E_NOT_FOUND, hresultText(HRESULT.E_NOT_FOUND), { namespaceId: id });
const invalid = (op: string, why: string, ctx: ErrorContext) => hnsError(op, HRESULT.E_INVALIDARG, `The parameter is incorrect. (${why})`, ctx);

/** The namespace with the endpoints in it, as HcnQueryNamespaceProperties answers. */
export function namespaceProperties(view: KeyedState, ns: SimNamespace): HcnNamespaceProperties {
  const members = [...view.membersOf(ns.ID)];
  return { ...structuredClone(ns), Resources: members.map((e) => ({ Type: 'Endpoint', Data: { ID: e.ID! } })) };
}

/** HcnCreateNamespace: the zero GUID lets HNS choose the ID (hcsshim createNamespace passes it). */
export function createNamespace(view: KeyedState, ids: SimIds, op: string, settings: Record<string, unknown>, id?: string): SimNamespace {
  const type = settings.Type ?? 'Host';
  if (typeof type !== 'string' || !NAMESPACE_TYPES.has(type)) throw invalid(op, `namespace Type ${JSON.stringify(type)}`, {});
  const useId = id && !ZERO_GUID.test(id) ? id.toUpperCase() : ids.guid();
  if (view.namespace(useId)) throw invalid(op, `a namespace with ID ${useId} already exists`, { namespaceId: useId });
  const ns: SimNamespace = { ID: useId, NamespaceId: view.nextNamespaceId(), Type: type, SchemaVersion: { ...HCN_SCHEMA_V2 } };
  view.addNamespace(ns);
  return structuredClone(ns);
}

/** HcnDeleteNamespace: endpoints still in it are left without a namespace (the runtime deletes it after CNI DEL). */
export function deleteNamespace(view: KeyedState, op: string, id: string): void {
  const ns = view.namespace(id);
  if (!ns) throw namespaceNotFound(op, id);
  for (const e of [...view.membersOf(ns.ID)]) view.setNamespace(e, undefined);
  view.deleteNamespace(ns);
}

/** HcnModifyNamespace: add an endpoint to the namespace or remove it (ResourceType Endpoint only). */
export function modifyNamespace(view: KeyedState, op: string, id: string, request: Record<string, unknown>): void {
  const ns = view.namespace(id);
  if (!ns) throw namespaceNotFound(op, id);
  const settings = request.Settings as { EndpointId?: unknown } | undefined;
  const ctx: ErrorContext = { namespaceId: ns.ID };
  if (request.ResourceType !== 'Endpoint' || typeof settings?.EndpointId !== 'string') {
    throw invalid(op, 'expected {"ResourceType":"Endpoint","RequestType":"Add"|"Remove","Settings":{"EndpointId":..}}', ctx);
  }
  const ep: HcnEndpoint | undefined = view.endpoint(settings.EndpointId);
  if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { ...ctx, endpointId: settings.EndpointId });
  const inThis = ep.HostComputeNamespace !== undefined && sameId(ep.HostComputeNamespace, ns.ID);
  if (request.RequestType === 'Add') {
    if (ep.HostComputeNamespace && !inThis) {
      throw hnsError(op, HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED, hresultText(HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED), { ...ctx, endpointId: ep.ID });
    }
    view.setNamespace(ep, ns.ID);
  } else if (request.RequestType === 'Remove') {
    if (!inThis) throw hnsError(op, HRESULT.E_NOT_FOUND, hresultText(HRESULT.E_NOT_FOUND), { ...ctx, endpointId: ep.ID });
    view.setNamespace(ep, undefined);
  } else {
    throw invalid(op, `RequestType ${String(request.RequestType)} is not modelled`, ctx);
  }
}

/** An open namespace handle (HCN_NAMESPACE). */
export interface HcnNamespaceHandle {
  readonly kind: 'namespace';
  readonly id: string;
}

export class SimulatedHcnNamespaces {
  private readonly open = new Set<HcnNamespaceHandle>();

  constructor(private readonly dp: SimulatedDataplane) {}

  private handle(id: string): HcnNamespaceHandle {
    const h: HcnNamespaceHandle = { kind: 'namespace', id: id.toUpperCase() };
    this.open.add(h);
    this.dp.openHandles++;
    return h;
  }

  private check(op: string, h: HcnNamespaceHandle): void {
    if (!this.open.has(h)) throw hnsError(op, HRESULT.E_HANDLE, hresultText(HRESULT.E_HANDLE));
  }

  async enumerateNamespaces(query: string): Promise<string> {
    const op = 'HcnEnumerateNamespaces';
    const q = parseHcnJson(op, query, true);
    const filter = typeof q.Filter === 'string' && q.Filter !== '' ? parseHcnJson(op, q.Filter, true) : {};
    const ids = this.dp
      .listNamespaces()
      .filter((n) => filterMatches(n as unknown as Record<string, unknown>, filter, {}))
      .map((n) => n.ID);
    await this.dp.enter(op, 'hns', ids.length, query);
    return JSON.stringify(ids);
  }

  async createNamespace(id: string, settings: string): Promise<HcnNamespaceHandle> {
    const op = 'HcnCreateNamespace';
    const body = parseHcnJson(op, settings, false);
    await this.dp.enter(op, 'hns', 0, `${id} ${settings}`);
    return this.handle(this.dp.createNamespace(op, body, id).ID);
  }

  async openNamespace(id: string): Promise<HcnNamespaceHandle> {
    const op = 'HcnOpenNamespace';
    await this.dp.enter(op, 'hns', 0, id);
    if (!this.dp.getNamespace(id)) throw namespaceNotFound(op, id);
    return this.handle(id);
  }

  async modifyNamespace(h: HcnNamespaceHandle, settings: string): Promise<void> {
    const op = 'HcnModifyNamespace';
    this.check(op, h);
    const req = parseHcnJson(op, settings, false);
    await this.dp.enter(op, 'hns', 0, `${h.id} ${settings}`);
    this.dp.modifyNamespace(op, h.id, req);
  }

  async queryNamespaceProperties(h: HcnNamespaceHandle, query: string): Promise<string> {
    const op = 'HcnQueryNamespaceProperties';
    this.check(op, h);
    parseHcnJson(op, query, true);
    await this.dp.enter(op, 'hns', 0, `${h.id} ${query}`);
    const ns = this.dp.getNamespace(h.id);
    if (!ns) throw namespaceNotFound(op, h.id);
    return JSON.stringify(ns);
  }

  async deleteNamespace(id: string): Promise<void> {
    const op = 'HcnDeleteNamespace';
    await this.dp.enter(op, 'hns', 0, id);
    this.dp.deleteNamespace(op, id);
  }

  async closeNamespace(h: HcnNamespaceHandle): Promise<void> {
    const op = 'HcnCloseNamespace';
    this.check(op, h);
    this.open.delete(h);
    this.dp.openHandles--;
    await this.dp.enter(op, 'hns', 0, h.id);
  }
}
