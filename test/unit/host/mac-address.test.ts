// Host.macAddress: the MAC of the adapter holding an address, which the kube-proxy source VIP endpoint
// takes (kube-proxy winkernel proxier.go gives its source VIP endpoint the host's MAC). Windows writes
// MACs as `00-15-5D-0A-0B-0C` (Get-NetAdapter MacAddress), the form HNS takes.
import { describe, expect, it } from '@jest/globals';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { SimulatedHost } from '../../../src/simulator/host.js';
import { Win32Host } from '../../../src/host/win32-host.js';
import type { Win32IpHelperNative } from '../../../src/win32/native.js';

describe('Host.macAddress', () => {
  it('win32: from the interface holding the address (os.networkInterfaces), in Windows form', async () => {
    const ifaces = { Ethernet: [{ address: '10.0.0.7', family: 'IPv4', mac: '00:15:5d:0a:0b:0c' }], lo: [{ address: '127.0.0.1', family: 'IPv4', mac: '00:00:00:00:00:00' }] };
    const host = new Win32Host({} as Win32IpHelperNative, () => ifaces);
    expect(await host.macAddress('10.0.0.7')).toBe('00-15-5D-0A-0B-0C');
    expect(await host.macAddress('127.0.0.1')).toBeUndefined();
    expect(await host.macAddress('10.0.0.8')).toBeUndefined();
  });

  it("simulated: the model's adapter holding the address has one MAC; an unknown address none", async () => {
    const host = new SimulatedHost(new SimulatedDataplane());
    const [first] = await host.interfaces();
    const mac = await host.macAddress(first.ipv4);
    expect(mac).toMatch(/^00-15-5D(-[0-9A-F]{2}){3}$/);
    expect(await host.macAddress(first.ipv4)).toBe(mac);
    expect(await host.macAddress('192.0.2.1')).toBeUndefined();
  });
});
