// computenetwork.dll!Hcn*Namespace over the SimulatedDataplane: the raw JSON calls hcsshim makes in
// hcn/hcnnamespace.go (hcnEnumerateNamespaces, hcnCreateNamespace, hcnOpenNamespace, hcnModifyNamespace,
// hcnQueryNamespaceProperties, hcnDeleteNamespace, hcnCloseNamespace). The agent never calls them: the
// CNI plugins do (win-overlay / win-bridge attach a pod's endpoint to its namespace), and the Windows
// test harness serves them to the real plugins through the stand-in DLL. The model is
// ../dataplane/sim-namespaces.ts. Failures are HnsErrors with HNS's HRESULTs, as ./simulated.ts throws.
import { namespaceNotFound } from '../dataplane/sim-namespaces.js';
import type { SimulatedDataplane } from '../dataplane/simulated.js';
import { HRESULT, hnsError, hresultText } from './errors.js';
import { filterMatches, parseHcnJson } from './simulated.js';

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
