// The legacy vxlan driver (Backend.LegacyRemoteEndpoints): a peer lease needs one HNS v1 remote endpoint
// per pod address of its subnet, named `remote_<ip>`, MAC `<MacPrefix>-<ip octets in hex>`, with a PA
// policy naming the peer's public IP, as flannel's Windows vxlan backend wrote them before it moved to
// RemoteSubnetRoute policies in 2019 (src/backends/vxlan/remote-endpoints.ts). The driver itself says
// so (desiredFor), as every driver does.
import { describe, expect, it } from '@jest/globals';
import { remoteEndpointDriver } from '../../../../src/backends/vxlan/remote-endpoints.js';
import { SimulatedDataplane } from '../../../../src/simulator/model.js';
import { HnsClient } from '../../../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../../../src/simulator/hns.js';

describe('remoteEndpointDriver.desiredFor', () => {
  it('one remote endpoint per pod address of the peer subnet', () => {
    const driver = remoteEndpointDriver(new HnsClient(new SimulatedHnsTransport(new SimulatedDataplane())), 'NET-ID', '0E-2A', 'flannel.4096');
    const items = driver.desiredFor({
      key: 'node-2',
      subnet: '10.244.2.0/29',
      publicIP: '10.0.0.12',
      backendType: 'vxlan',
      backendData: { VNI: 4096, VtepMAC: '0e:2a:0a:00:00:0c' },
    });
    expect(items.map((e) => [e.Name, e.MacAddress, driver.desiredKey(e)])).toEqual([
      ['remote_10.244.2.2', '0E-2A-0A-F4-02-02', '10.244.2.2'],
      ['remote_10.244.2.3', '0E-2A-0A-F4-02-03', '10.244.2.3'],
      ['remote_10.244.2.4', '0E-2A-0A-F4-02-04', '10.244.2.4'],
      ['remote_10.244.2.5', '0E-2A-0A-F4-02-05', '10.244.2.5'],
      ['remote_10.244.2.6', '0E-2A-0A-F4-02-06', '10.244.2.6'],
    ]);
    expect(items[0]).toMatchObject({ VirtualNetwork: 'NET-ID', IsRemoteEndpoint: true, Policies: [{ Type: 'PA', PA: '10.0.0.12' }] });
  });
});
