// HCN handle lifetimes for HnsClient: closing a handle without failing the operation that used it,
// and the network handles kept open across policy writes (one HcnModifyNetwork per write instead of
// open, modify, close). hcsshim hcn/hcnnetwork.go (modifyNetwork) opens and closes a handle per call;
// keeping one open is our own addition for nodes with many remote subnets.
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { isHnsExists, isHnsRefusal } from './errors.js';
import type { HcnHandle, HnsTransport } from './transport.js';

/** HcnCloseNetwork / HcnCloseEndpoint; a failure is logged (the handle leaks), never thrown. False when it failed. */
export async function closeQuietly(transport: HnsTransport, log: Logger, h: HcnHandle): Promise<boolean> {
  try {
    await (h.kind === 'network' ? transport.closeNetwork(h) : transport.closeEndpoint(h));
    return true;
  } catch (err) {
    if (h.kind === 'network') log.warn('HcnCloseNetwork failed; the handle leaks', { networkId: h.id, error: errorMessage(err) });
    else log.warn('HcnCloseEndpoint failed; the handle leaks', { endpointId: h.id, error: errorMessage(err) });
    return false;
  }
}

/** Network handles kept open for policy writes, by network ID (case-insensitive, as HNS GUIDs are). */
export class KeptNetworkHandles {
  private readonly kept = new Map<string, Promise<HcnHandle>>();

  constructor(
    private readonly transport: HnsTransport,
    private readonly log: Logger,
  ) {}

  /**
   * HcnModifyNetwork on network `id`. `keepOpen`: through the handle kept for it (opened on first
   * use), else open, modify, close. A kept handle is dropped after any error that may mean it is stale.
   */
  async modify(id: string, settings: string, keepOpen: boolean): Promise<void> {
    if (!keepOpen) {
      const h = await this.transport.openNetwork(id);
      try {
        await this.transport.modifyNetwork(h, settings);
      } finally {
        await closeQuietly(this.transport, this.log, h);
      }
      return;
    }
    const key = id.toUpperCase();
    let opening = this.kept.get(key);
    if (!opening) {
      opening = this.transport.openNetwork(id);
      this.kept.set(key, opening);
    }
    let h: HcnHandle;
    try {
      h = await opening;
    } catch (err) {
      if (this.kept.get(key) === opening) this.kept.delete(key);
      throw err;
    }
    try {
      await this.transport.modifyNetwork(h, settings);
    } catch (err) {
      // Unless HNS only refused what the request carried, the handle may be stale (HNS restarted, the
      // network deleted): the next write opens a new one.
      if (!isHnsRefusal(err) && !isHnsExists(err)) await this.release(id);
      throw err;
    }
  }

  /** Close the handle kept open for network `id`, if any. */
  async release(id: string): Promise<void> {
    const key = id.toUpperCase();
    const opening = this.kept.get(key);
    if (!opening) return;
    this.kept.delete(key);
    let h: HcnHandle;
    try {
      h = await opening;
    } catch {
      return;
    }
    await closeQuietly(this.transport, this.log, h);
  }
}
