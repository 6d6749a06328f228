// Every family of src/basics/errors.ts is made by the one generic base: `new XError(code, message, context?,
// options?)` gives an instance of its class and of FlannelError, named after its class, keeping code,
// context and cause; the four families with a field callers read take it from `context` (HnsError's
// `hresult`, shown in hex in the context; RouteError's `status`; KubeTimeoutError's `timeoutMs`;
// KubeApiError's `statusCode`) or `options` (KubeApiError's `body`, kept out of the logged context).
import { describe, expect, it } from '@jest/globals';
import * as errors from '../../../src/basics/errors.js';
import { ERROR_FAMILIES, FlannelError, HnsError, KubeApiError, KubeTimeoutError, RouteError, isFlannelError } from '../../../src/basics/errors.js';

type AnyFamily = new (code: string, message: string, context?: errors.ErrorContext, options?: ErrorOptions) => FlannelError;

describe('one pattern for every error family', () => {
  it.each(Object.entries(ERROR_FAMILIES))('%s', (name, codes) => {
    const cls = (errors as unknown as Record<string, AnyFamily>)[name];
    expect(typeof cls).toBe('function');
    const cause = new Error('underneath');
    const extra = { status: 503, timeoutMs: 1000 };
    for (const code of codes) {
      const err = new cls(code, 'what went wrong; what to do', { node: 'n1', ...extra }, { cause });
      expect(err).toBeInstanceOf(cls);
      expect(err).toBeInstanceOf(FlannelError);
      expect(err).toBeInstanceOf(Error);
      expect(isFlannelError(err, code)).toBe(true);
      expect([err.name, err.code, err.message, err.cause]).toEqual([name, code, 'what went wrong; what to do', cause]);
      expect(err.context).toMatchObject({ node: 'n1' });
    }
  });

  it('the families with fields take them from context (or options)', () => {
    const hns = new HnsError('FLANNEL_ERR_HNS_CALL', 'm', { op: 'HcnCreateNetwork', hresult: 0x803b0014 });
    expect([hns.hresult, hns.context.hresult]).toEqual([0x803b0014, '0x803B0014']);
    expect(new HnsError('FLANNEL_ERR_HNS_CALL', 'm').hresult).toBeUndefined();
    expect(new RouteError('FLANNEL_ERR_ROUTE', 'm', { status: 1168 }).status).toBe(1168);
    expect(new KubeTimeoutError('FLANNEL_ERR_KUBE_TIMEOUT', 'm', { timeoutMs: 30_000 }).timeoutMs).toBe(30_000);
    const api = new KubeApiError('FLANNEL_ERR_KUBE_API', 'GET /api/v1/nodes: HTTP 403', { status: 403 }, { body: '{"kind":"Status"}' });
    expect([api.statusCode, api.body, api.context]).toEqual([403, '{"kind":"Status"}', { status: 403 }]);
  });
});
