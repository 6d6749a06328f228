import { describe, it, expect } from '@jest/globals';
import { HnsError } from '../../../src/basics/errors.js';
import { HRESULT, hnsError, isHnsRefusal, isNetworkGone, namingAdapter, parseEnvelope, parseErrorRecord } from '../../../src/hns/errors.js';

describe('hnsError: HRESULT -> code', () => {
  it.each([
    [0x803b0001, 'FLANNEL_ERR_HNS_NOT_FOUND'],
    [0x803b0002, 'FLANNEL_ERR_HNS_NOT_FOUND'],
    [0x80070490, 'FLANNEL_ERR_HNS_NOT_FOUND'],
    [0x803b0010, 'FLANNEL_ERR_HNS_EXISTS'],
    [0x803b0012, 'FLANNEL_ERR_HNS_EXISTS'],
    [0x803b0014, 'FLANNEL_ERR_HNS_ATTACHED'],
    [0x80070005, 'FLANNEL_ERR_HNS_ACCESS_DENIED'],
    [0x80070057, 'FLANNEL_ERR_HNS_CALL'],
    [0x803b001b, 'FLANNEL_ERR_HNS_CALL'],
    [0x803b0001 | 0, 'FLANNEL_ERR_HNS_NOT_FOUND'], // signed form
  ])('%s -> %s', (hr, code) => {
    const err = hnsError('HcnOpenNetwork', hr);
    expect(err).toBeInstanceOf(HnsError);
    expect(err.code).toBe(code);
    expect(err.hresult).toBe(hr >>> 0);
  });

  it('names the operation, the HRESULT in hex and the HNS text in its context', () => {
    const err = hnsError('HcnCreateNetwork', HRESULT.HCN_E_NETWORK_ALREADY_EXISTS, undefined, { network: 'cbr0' });
    expect(err.code).toBe('FLANNEL_ERR_HNS_EXISTS');
    expect(err.context).toEqual({ network: 'cbr0', op: 'HcnCreateNetwork', hresult: '0x803B0010', hnsError: 'A network with this name already exists.' });
  });
});

describe('hnsError: v1 error texts', () => {
  it.each([
    ['This endpoint is already attached to the switch.', 'FLANNEL_ERR_HNS_ATTACHED'],
    ['Network not found', 'FLANNEL_ERR_HNS_NOT_FOUND'],
    ['Element not found.', 'FLANNEL_ERR_HNS_NOT_FOUND'],
    ['The network was not found.', 'FLANNEL_ERR_HNS_NOT_FOUND'],
    ['A network with this name already exists.', 'FLANNEL_ERR_HNS_EXISTS'],
    ['Access is denied.', 'FLANNEL_ERR_HNS_ACCESS_DENIED'],
    ['The parameter is incorrect.', 'FLANNEL_ERR_HNS_CALL'],
  ])('%s -> %s', (text, code) => {
    expect(hnsError('HNSCall POST /endpoints/X/attach', undefined, text).code).toBe(code);
  });

  it('a known HRESULT wins over the text', () => {
    expect(hnsError('HcnOpenNetwork', HRESULT.E_ACCESSDENIED, 'network not found').code).toBe('FLANNEL_ERR_HNS_ACCESS_DENIED');
  });
});

describe('parseErrorRecord', () => {
  it.each([
    ['', undefined],
    ['   ', undefined],
    ['{"Success":false,"Error":"The parameter is incorrect. ","ErrorCode":2147942487}', { success: false, error: 'The parameter is incorrect. ', hresult: 0x80070057 }],
    ['not json', { success: false, error: 'not json' }],
  ])('%j', (json, want) => {
    expect(parseErrorRecord(json)).toEqual(want);
  });
});

describe('parseEnvelope', () => {
  it('returns Output on success', () => {
    expect(parseEnvelope('HNSCall GET /globals/version', '{"Success":true,"Output":{"Major":13,"Minor":2}}')).toEqual({ Major: 13, Minor: 2 });
    expect(parseEnvelope('HNSCall DELETE /networks/X', '{"Success":true}')).toBeUndefined();
  });

  it.each([
    ['{"Success":false,"Error":"This endpoint is already attached to the switch."}', 'FLANNEL_ERR_HNS_ATTACHED'],
    ['{"Success":false,"Error":"whatever","ErrorCode":2151350273}', 'FLANNEL_ERR_HNS_NOT_FOUND'],
    ['{"Success":false}', 'FLANNEL_ERR_HNS_CALL'],
    ['garbage', 'FLANNEL_ERR_HNS_CALL'],
    ['[1,2]', 'FLANNEL_ERR_HNS_CALL'],
  ])('%s throws %s', (json, code) => {
    let caught: unknown;
    try {
      parseEnvelope('HNSCall GET /networks/', json, { network: 'cbr0' });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(HnsError);
    expect((caught as HnsError).code).toBe(code);
    expect((caught as HnsError).context.network).toBe('cbr0');
    expect((caught as HnsError).context.op).toBe('HNSCall GET /networks/');
  });
});

describe('not found, network gone, adapter not found (src/hns/errors.ts)', () => {
  it.each([
    // HNS v1 answers a call on a missing network with 0x80070490 (Azure/aks-engine#168): network gone
    ['HNSCall GET /networks/5A2C', HRESULT.E_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND', true],
    ['HNSCall DELETE /networks/5A2C', HRESULT.E_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND', true],
    ['HNSCall POST /endpoints/', HRESULT.E_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND', true],
    // ... but not a missing endpoint, nor a v2 call (where the network has its own HRESULT)
    ['HNSCall DELETE /endpoints/5A2C', HRESULT.E_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND', false],
    ['HcnModifyNetwork', HRESULT.E_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND', false],
    ['HcnModifyNetwork', HRESULT.HCN_E_NETWORK_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND', true],
    // a Remove of a policy that is not there: HCN_E_POLICY_NOT_FOUND, already gone
    ['HcnModifyNetwork', HRESULT.HCN_E_POLICY_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND', false],
    ['HcnCreateNetwork', HRESULT.HCN_E_ADAPTER_NOT_FOUND, 'FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND', false],
  ] as const)('%s 0x%s -> %s, network gone %s', (op, hr, code, gone) => {
    const err = hnsError(op, hr);
    expect(err.code).toBe(code);
    expect(isNetworkGone(err)).toBe(gone);
    expect(isHnsRefusal(err)).toBe(false);
  });

  it('the adapter HNS could not find is named in the message (HNS only says "An adapter was not found.")', () => {
    const err = namingAdapter(hnsError('HcnCreateNetwork', HRESULT.HCN_E_ADAPTER_NOT_FOUND), 'Ethernet 3') as HnsError;
    expect(err.code).toBe('FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND');
    expect(err.context['adapter']).toBe('Ethernet 3');
    expect(err.message).toContain('[adapter "Ethernet 3"]');
    const other = hnsError('HcnCreateNetwork', HRESULT.E_FAIL);
    expect(namingAdapter(other, 'Ethernet 3')).toBe(other);
  });
});

describe('hnsError: the hint fits the error', () => {
  const SERVICE = /check that the HNS service is running/;
  const EVENT_LOG = /^look at the Microsoft-Windows-Host-Network-Service-Admin event log/;
  it.each<[string, string, number | undefined, Record<string, string>, RegExp, string | undefined]>([
    ['a stopped service', 'HcnModifyNetwork', HRESULT.HCN_E_MANAGER_STOPPED, {}, SERVICE, undefined],
    ['RPC server unavailable', 'HcnOpenNetwork', 0x800706ba, {}, SERVICE, undefined],
    // HNS answered with a v1 error text and no HRESULT: it is running, so not the service hint.
    ['v1 error text, no HRESULT', 'HNSCall POST /networks/', undefined, {}, EVENT_LOG, 'An adapter was not ready'],
    ['neither an HRESULT nor text (no answer)', 'HNSCall POST /networks/', undefined, {}, SERVICE, undefined],
    ['an empty v1 error text', 'HNSCall POST /networks/', undefined, {}, SERVICE, '  '],
    [
      'E_INVALIDARG on a policy write',
      'HcnModifyNetwork',
      HRESULT.E_INVALIDARG,
      { networkId: 'N' },
      /^HNS refused one of its values \(HNS does not say which.*\) of the network policy \(a RemoteSubnetRoute or route for a peer\); fix the value/,
      undefined,
    ],
    ['an invalid prefix', 'HcnModifyNetwork', HRESULT.HCN_E_INVALID_PREFIX, { networkId: 'N' }, /^HNS refused the DestinationPrefix .* of the network policy/, undefined],
    ['an invalid IP on an endpoint', 'HcnCreateEndpoint', HRESULT.HCN_E_INVALID_IP, { endpoint: 'e' }, /^HNS refused an IP address .* of the endpoint;/, undefined],
    ['a policy type', 'HcnModifyNetwork', HRESULT.HCN_E_INVALID_POLICY_TYPE, { policyType: 'SDNRoute' }, /^HNS refused the policy Type .* of the SDNRoute policy;/, undefined],
    ['an unknown failure HNS answered', 'HcnModifyNetwork', 0x80004005, {}, EVENT_LOG, undefined],
    ['a stopped service, with text', 'HcnModifyNetwork', HRESULT.HCN_E_MANAGER_STOPPED, {}, SERVICE, 'The service has stopped'],
    ['access denied keeps its own advice', 'HcnOpenNetwork', HRESULT.E_ACCESSDENIED, {}, /^run flanneld as Administrator/, undefined],
  ])('%s', (_what, op, hr, context, hint, text) => {
    const msg = hnsError(op, hr, text, context).message;
    const advice = /\(([^()]*(?:\([^()]*\)[^()]*)*)\)$/.exec(msg)?.[1] ?? '';
    expect(advice).toMatch(hint);
    if (hint !== SERVICE) expect(msg).not.toMatch(SERVICE);
  });
});
