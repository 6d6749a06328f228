// Host on the SimulatedDataplane: the adapters the model keeps (physical NICs, then `vEthernet (...)`
// vNICs) and their MACs, the default route's interface, and per-interface IPv4 forwarding
// (the simulated counterpart of GetAdaptersAddresses / Get/SetIpInterfaceEntry).
import { simAdapterMac } from '../dataplane/sim-host.js';
import type { SimulatedDataplane } from '../dataplane/simulated.js';
import type { Host, HostInterface } from './host.js';

export class SimulatedHost implements Host {
  constructor(private readonly dp: SimulatedDataplane) {}

  async interfaces(): Promise<HostInterface[]> {
    await this.dp.enter('GetAdaptersAddresses', 'host');
    return this.dp
      .listAdapters()
      .filter((a) => a.IPAddress !== '')
      .map((a) => ({ name: a.Name, index: a.InterfaceIndex, ipv4: a.IPAddress, prefixLength: a.PrefixLength, mtu: a.Mtu }));
  }

  async macAddress(ipv4: string): Promise<string | undefined> {
    await this.dp.enter('GetAdaptersAddresses', 'host');
    const a = this.dp.listAdapters().find((x) => x.IPAddress === ipv4);
    return a && simAdapterMac(a);
  }

  async defaultRouteInterfaceIndex(): Promise<number | undefined> {
    await this.dp.enter('GetIpForwardTable2', 'host');
    return this.dp.defaultRouteInterfaceIndex();
  }

  async setForwarding(interfaceIndex: number, enabled: boolean): Promise<void> {
    await this.dp.enter('SetIpInterfaceEntry', 'host', 0, JSON.stringify({ InterfaceIndex: interfaceIndex, ForwardingEnabled: enabled }));
    this.dp.setForwarding(interfaceIndex, enabled);
  }

  async getForwarding(interfaceIndex: number): Promise<boolean> {
    await this.dp.enter('GetIpInterfaceEntry', 'host', 0, JSON.stringify({ InterfaceIndex: interfaceIndex }));
    return this.dp.getForwarding(interfaceIndex);
  }
}
