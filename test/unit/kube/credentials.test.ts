// requestCredentials (src/kube/credentials.ts) builds a request's headers from client-node's
// applyToHTTPSOptions as client-node's applyToFetchOptions builds them into node-fetch Headers (which the
// kubeconfig bundle no longer loads for it: packaging/kubeconfig-bundle.mjs): the same headers, in lower
// case, for every kind of kubeconfig user that sets one (client-node 1.4 config.ts applyHTTPSOptions,
// applyAuthorizationHeader). A header Node's http client would refuse is FLANNEL_ERR_KUBE_AUTH, and its
// message does not carry the credential (node-fetch's TypeError quoted the whole header value).
import { describe, expect, it } from '@jest/globals';
import { KubeConfig, type User } from '@kubernetes/client-node';
import { KubeError } from '../../../src/basics/errors.js';
import { requestCredentials } from '../../../src/kube/credentials.js';
import { expectCode } from '../../support/errors.js';

function kubeConfig(user: Omit<User, 'name'>): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443' }],
    users: [{ name: 'u', ...user }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

describe('requestCredentials', () => {
  it.each<[string, Omit<User, 'name'>]>([
    ['no credentials', {}],
    ['a bearer token', { token: 'tok-1' }],
    ['basic auth', { username: 'admin', password: 'p:ss w' }],
    ['an impersonated user beside a token', { token: 'tok-1', impersonateUser: 'system:node:win-1' }],
  ])("%s: the headers client-node's applyToFetchOptions makes", async (_name, user) => {
    const expected = Object.fromEntries((await kubeConfig(user).applyToFetchOptions({})).headers as unknown as Iterable<[string, string]>);
    const got = await requestCredentials(kubeConfig(user));
    expect(got.headers).toEqual(expected);
    expect(got.agent).toBeDefined();
  });

  it('a token Node would refuse in a header: FLANNEL_ERR_KUBE_AUTH, without the token in the message', async () => {
    const err = await expectCode(requestCredentials(kubeConfig({ token: 'tok-secret\nInjected: 1' })), KubeError, 'FLANNEL_ERR_KUBE_AUTH');
    expect(err.message).not.toContain('tok-secret');
  });
});
