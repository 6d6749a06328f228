// Run by test/windows/hns-acl.test.ts under the Windows Node (Wine), with the staged build's dist/: the
// agent's HnsClient on the win32 transport (ffi-rs -> stand-in computenetwork.dll -> the sim server)
// adds a SetPolicy IP set and an endpoint ACL rule naming it, reads them back, tries to remove the set
// while the rule names it, then removes the rule and the set. One JSON line per step on stdout.
// Usage: node hns-acl-calls.mjs <dist dir> <dll dir> <network ID> <endpoint ID>
import { win32 } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dist, dllDir, networkId, endpointId] = process.argv.slice(2);
const load = (file) => import(pathToFileURL(win32.join(dist, file)).href);
const { loadWin32Native } = await load('win32/ffi.js');
const { Win32HnsTransport } = await load('hns/win32-transport.js');
const { HnsClient } = await load('hns/client.js');

const hns = new HnsClient(new Win32HnsTransport(await loadWin32Native(dllDir)));
const set = { Id: 'azure-npm-web', Name: 'web', PolicyType: 'IPSET', Values: '10.244.1.11,10.244.2.0/24' };
const acl = { Id: 'allow-web', Protocols: '6', Action: 'Allow', Direction: 'In', RemoteAddresses: 'azure-npm-web', LocalPorts: '80', RuleType: 'Switch', Priority: 100 };

async function step(name, fn) {
  try {
    const out = await fn();
    console.log(JSON.stringify({ step: name, ok: true, ...(out === undefined ? {} : { out }) }));
  } catch (err) {
    console.log(JSON.stringify({ step: name, ok: false, code: err?.code, hresult: err?.hresult, message: String(err?.message ?? err) }));
  }
}

await step('addSet', () => hns.addSetPolicies(networkId, [set]));
await step('addAcl', () => hns.addEndpointAcls(endpointId, [acl]));
await step('readAcls', () => hns.getEndpointAcls(endpointId));
await step('readSets', () => hns.getSetPolicies(networkId));
await step('removeSetInUse', () => hns.removeSetPolicies(networkId, [set]));
await step('removeAcl', () => hns.removeEndpointAcls(endpointId, [acl]));
await step('removeSet', () => hns.removeSetPolicies(networkId, [set]));
await step('readAfter', async () => ({ acls: await hns.getEndpointAcls(endpointId), sets: await hns.getSetPolicies(networkId) }));
