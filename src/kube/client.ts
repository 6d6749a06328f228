// Build the @kubernetes/client-node KubeConfig the kube subnet manager talks through.
// Mirrors flannel pkg/subnet/kube/kube.go NewSubnetManager -> clientcmd.BuildConfigFromFlags(apiUrl, kubeconfig):
// `--kubeconfig-file` if given; else `--kube-api-url` alone; else the in-cluster service account.
// `--kube-api-url` overrides the server of the kubeconfig. TLS is verified unless the kubeconfig says
// `insecure-skip-tls-verify: true`, which is logged as a warning (client-go only honours it too).
// Plain http:// has no TLS at all: it is accepted only for a server given explicitly (--kube-api-url or
// the kubeconfig's server) with no credentials in the kubeconfig; a bearer token, basic auth, an exec or
// auth-provider plugin, a token file or a client certificate over http:// is refused with
// FLANNEL_ERR_KUBE_INSECURE (client-go would send the token in clear text).
// Token files (kubeconfig `tokenFile` / `token-file`, the in-cluster service account token) and exec
// plugins are served as client-go serves them: ./credentials.ts.
import { isIPv6 } from 'node:net';
import { KubeConfig } from './kubeconfig.js';
import type { Cluster, User } from '@kubernetes/client-node';
import { systemClock } from '../basics/clock.js';
import type { Clock } from '../basics/clock.js';
import { errorMessage, FlannelError, KubeError } from '../basics/errors.js';
import { hostFileReader } from '../basics/fs.js';
import type { FileReader } from '../basics/fs.js';
import type { Logger } from '../basics/log.js';
import { boundExecPluginStderr, extractTokenFiles, isTokenFileUser, tokenFileUser, useInClusterToken, useTokenFiles } from './credentials.js';
import type { TokenSourceOptions } from './credentials.js';

export interface KubeClientOptions {
  /** `--kubeconfig-file` ("" = none). */
  kubeconfigFile: string;
  /** `--kube-api-url` ("" = none). */
  kubeApiUrl: string;
  /**
   * In-cluster only: prefix of the service account files (default `$CONTAINER_SANDBOX_MOUNT_POINT`,
   * set in a Windows HostProcess container, else "").
   */
  inClusterPathPrefix?: string;
  /**
   * In-cluster only: KUBERNETES_SERVICE_HOST / _PORT (and CONTAINER_SANDBOX_MOUNT_POINT, the default
   * path prefix), as src/config read them; none given = not in a cluster.
   */
  env?: Record<string, string | undefined>;
  /** Where the insecure-skip-tls-verify warning goes. */
  log?: Logger;
  /** Reads the kubeconfig and checks for the service account token (default: the host's files). */
  files?: FileReader;
  /** When a token file's token is a minute old (default: the system clock). */
  clock?: Clock;
}

const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function checkServerUrl(server: string, source: string): void {
  let u: URL;
  try {
    u = new URL(server);
  } catch {
    throw new KubeError('FLANNEL_ERR_KUBE', `${source}: API server URL "${server}" is not a valid URL; use https://host:port`, { server });
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') {
    throw new KubeError('FLANNEL_ERR_KUBE', `${source}: API server URL "${server}" must start with https:// or http://`, { server });
  }
}

/** http:// has no TLS: client-node refuses it unless skipTLSVerify is set, which changes nothing else. */
function withServer(cluster: Cluster, server: string): Cluster {
  return { ...cluster, server, skipTLSVerify: cluster.skipTLSVerify || server.startsWith('http:') };
}

function replaceCurrentCluster(kc: KubeConfig, server: string | undefined): void {
  const current = kc.getCurrentCluster();
  if (!current) return;
  const clusters = kc.clusters.map((c) => (c.name === current.name ? withServer(c, server ?? c.server) : c));
  kc.loadFromOptions({ clusters, users: kc.users, contexts: kc.contexts, currentContext: kc.currentContext });
}

function fromFile(file: string, apiUrl: string, files: FileReader, tokens: TokenSourceOptions): KubeConfig {
  let text: string;
  try {
    text = files.readText(file, '--kubeconfig-file');
  } catch (err) {
    if (err instanceof FlannelError) throw err;
    throw new KubeError(
      'FLANNEL_ERR_KUBE',
      `fail to create kubernetes config: cannot read kubeconfig file ${file}: ${errorMessage(err)}; fix --kubeconfig-file (or omit it to use the in-cluster service account)`,
      { file },
      { cause: err },
    );
  }
  const kc = new KubeConfig();
  try {
    const extracted = extractTokenFiles(text, file);
    kc.loadFromString(extracted.text);
    useTokenFiles(kc, extracted.tokenFiles, tokens);
  } catch (err) {
    throw new KubeError(
      'FLANNEL_ERR_KUBE',
      `fail to create kubernetes config: kubeconfig file ${file} is not a valid kubeconfig: ${errorMessage(err)}; check the YAML (clusters, users, contexts, current-context)`,
      { file },
      { cause: err },
    );
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster && !apiUrl) {
    throw new KubeError(
      'FLANNEL_ERR_KUBE',
      `fail to create kubernetes config: kubeconfig file ${file} has no usable current context (current-context "${kc.getCurrentContext() ?? ''}"); set current-context to a context whose cluster exists, or pass --kube-api-url`,
      { file },
    );
  }
  if (!cluster) {
    // Server only from --kube-api-url; keep the file's user if there is exactly one.
    const user = kc.getCurrentUser() ?? kc.users[0] ?? { name: 'user' };
    kc.loadFromClusterAndUser({ name: 'cluster', server: apiUrl, skipTLSVerify: apiUrl.startsWith('http:') }, user);
    return kc;
  }
  if (apiUrl) {
    replaceCurrentCluster(kc, apiUrl);
  } else {
    if (!cluster.server) {
      throw new KubeError(
        'FLANNEL_ERR_KUBE',
        `fail to create kubernetes config: kubeconfig file ${file}: cluster "${cluster.name}" has no server; set clusters[].cluster.server or pass --kube-api-url`,
        { file },
      );
    }
    checkServerUrl(cluster.server, `kubeconfig file ${file}`);
    replaceCurrentCluster(kc, undefined);
  }
  return kc;
}

/** The kinds of credentials a kubeconfig user carries (none = anonymous). */
function credentialKinds(user: User | null | undefined): string[] {
  if (!user) return [];
  const kinds: string[] = [];
  if (user.token) kinds.push('token');
  if (user.username || user.password) kinds.push('basic-auth');
  if (user.authProvider) kinds.push(isTokenFileUser(user) ? 'token-file' : 'auth-provider');
  if (user.exec) kinds.push('exec');
  if (user.certData || user.certFile || user.keyData || user.keyFile) kinds.push('client-certificate');
  return kinds;
}

/** Refuse credentials over http://; warn when TLS verification is off. */
function checkTransport(kc: KubeConfig, source: string, log: Logger | undefined): KubeConfig {
  const cluster = kc.getCurrentCluster();
  if (!cluster) return kc;
  if (cluster.server.startsWith('http:')) {
    const kinds = credentialKinds(kc.getCurrentUser());
    if (kinds.length > 0) {
      throw new KubeError(
        'FLANNEL_ERR_KUBE_INSECURE',
        `refusing to send credentials (${kinds.join(', ')}) to the API server over plain http:// (${cluster.server}, from ${source}); ` +
          'use an https:// server, or remove the credentials from the kubeconfig for an unauthenticated http:// endpoint',
        { server: cluster.server, source },
      );
    }
  } else if (cluster.skipTLSVerify) {
    log?.warn('TLS verification of the API server is disabled (insecure-skip-tls-verify); anyone on the path can impersonate it', {
      server: cluster.server,
      source,
    });
  }
  return kc;
}

/**
 * The KubeConfig for flanneld's flags. Throws KubeError FLANNEL_ERR_KUBE naming the file and the fix
 * when the kubeconfig is missing or invalid, or when in-cluster config is requested outside a cluster,
 * and FLANNEL_ERR_KUBE_INSECURE when credentials would go over plain http://.
 */
export function buildKubeConfig(opts: KubeClientOptions): KubeConfig {
  const apiUrl = opts.kubeApiUrl.trim();
  const source = apiUrl ? '--kube-api-url' : opts.kubeconfigFile ? `kubeconfig file ${opts.kubeconfigFile}` : 'the in-cluster service account';
  const kc = checkTransport(buildConfig(opts, apiUrl), source, opts.log);
  boundExecPluginStderr(kc);
  return kc;
}

function buildConfig(opts: KubeClientOptions, apiUrl: string): KubeConfig {
  if (apiUrl) checkServerUrl(apiUrl, '--kube-api-url');
  const files = opts.files ?? hostFileReader;
  const tokens: TokenSourceOptions = { clock: opts.clock ?? systemClock, log: opts.log, readFile: (p) => files.readText(p, 'the token file') };
  if (opts.kubeconfigFile) return fromFile(opts.kubeconfigFile, apiUrl, files, tokens);
  const kc = new KubeConfig();
  if (apiUrl) {
    kc.loadFromClusterAndUser({ name: 'cluster', server: apiUrl, skipTLSVerify: apiUrl.startsWith('http:') }, { name: 'user' });
    return kc;
  }
  const env = opts.env ?? {};
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new KubeError(
      'FLANNEL_ERR_KUBE',
      'fail to create kubernetes config: not running in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set); pass --kubeconfig-file or --kube-api-url',
      {},
    );
  }
  const prefix = opts.inClusterPathPrefix ?? env.CONTAINER_SANDBOX_MOUNT_POINT ?? '';
  const tokenFile = `${prefix}${SERVICEACCOUNT_DIR}/token`;
  const caFile = `${prefix}${SERVICEACCOUNT_DIR}/ca.crt`;
  if (!files.exists(tokenFile)) {
    throw new KubeError(
      'FLANNEL_ERR_KUBE',
      `fail to create kubernetes config: in-cluster service account token ${tokenFile} not found; mount the service account (automountServiceAccountToken) or pass --kubeconfig-file`,
      { file: tokenFile },
    );
  }
  // The same shape client-node's loadFromCluster builds, without it reading process.env.
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const server = `${scheme}://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  // client-node's loadFromCluster user is its FileAuth (re-read every 60 s of wall time, untrimmed, not on a 401).
  kc.loadFromClusterAndUser({ name: 'inCluster', server, caFile, skipTLSVerify: scheme === 'http' }, tokenFileUser('inClusterUser', tokenFile));
  useInClusterToken(kc, tokenFile, tokens);
  return kc;
}
