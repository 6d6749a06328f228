// A client-node KubeConfig for a plain-http server a test listens with on 127.0.0.1 (no credentials).
import type { Server } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

export function kubeConfigFor(server: Server): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as { port: number }).port}`, skipTLSVerify: true }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}
