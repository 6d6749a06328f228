// The CNI plugin executables the conflists of ./conflist.ts run on Windows, by the name a CNI runtime looks
// them up under (libcni invoke.FindInPath: `type` + `.exe` in the bin dir). The readiness check (./readiness.ts)
// looks for them; `flanneld install-cni` (src/cni-plugins/) installs them.

/** The plugins the flannel CNI config needs on Windows: the meta-plugin, both delegates and the IPAM. */
export const CNI_PLUGIN_FILES = ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'] as const;
/** Microsoft's sdnbridge, which the dual-stack conflist runs (with host-local as its IPAM). */
export const SDNBRIDGE_FILE = 'sdnbridge.exe';
export type CniPluginFile = (typeof CNI_PLUGIN_FILES)[number] | typeof SDNBRIDGE_FILE;
