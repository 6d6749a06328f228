// A kubeconfig for the fake API server, read by client-node, kubectl and the agent's --kubeconfig-file.
import { writeFile } from 'node:fs/promises';

/**
 * Write a kubeconfig for `serverUrl`. A plain `http://` server gets `insecure-skip-tls-verify: true`
 * (client-node refuses http otherwise; there is no TLS to verify).
 */
export async function writeKubeconfig(path: string, serverUrl: string, opts: { token?: string; insecure?: boolean; caFile?: string } = {}): Promise<void> {
  const q = (s: string) => JSON.stringify(s);
  const insecure = opts.insecure ?? serverUrl.startsWith('http:');
  const lines = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: fake',
    '  cluster:',
    `    server: ${q(serverUrl)}`,
    ...(insecure ? ['    insecure-skip-tls-verify: true'] : []),
    ...(opts.caFile !== undefined ? [`    certificate-authority: ${q(opts.caFile)}`] : []),
    'users:',
    '- name: fake-user',
    `  user: ${opts.token !== undefined ? `{token: ${q(opts.token)}}` : '{}'}`,
    'contexts:',
    '- name: fake',
    '  context:',
    '    cluster: fake',
    '    user: fake-user',
    'current-context: fake',
    '',
  ];
  await writeFile(path, lines.join('\n'), 'utf8');
}
