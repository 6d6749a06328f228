// The agent's version, printed by --version and logged at start, and the User-Agent of its requests.
import { BUILD_COMMIT } from './build-commit.js';

export const VERSION = '0.1.0';

/** The commit the build was made from, shortened to 7 characters as client-go's adjustCommit; `unknown` when none. */
export const COMMIT: string = BUILD_COMMIT === '' ? 'unknown' : BUILD_COMMIT.slice(0, 7);

/** Go's GOOS / GOARCH names for Node's platform / arch, as client-go's User-Agent carries them. */
const GOOS: Record<string, string> = { win32: 'windows', linux: 'linux', darwin: 'darwin', freebsd: 'freebsd' };
const GOARCH: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', s390x: 's390x', ppc64: 'ppc64le' };

/**
 * The User-Agent sent on every request to the API server, shaped as client-go's
 * DefaultKubernetesUserAgent (k8s.io/client-go rest/config.go: `<command>/<version> (<os>/<arch>)
 * kubernetes/<commit>`): `flanneld-windows/<version> (<os>/<arch>) <commit>`, so audit logs and
 * API Priority and Fairness can tell the agent apart.
 */
export function userAgent(platform: string = process.platform, arch: string = process.arch, commit: string = COMMIT): string {
  return `flanneld-windows/${VERSION} (${GOOS[platform] ?? platform}/${GOARCH[arch] ?? arch}) ${commit}`;
}
