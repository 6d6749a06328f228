// client-node's KubeConfig (kubeconfig loading, authentication plugins, TLS options) from its own module
// rather than the package index, which also loads every generated API and model class.
// `dist/config.js` still imports the generated index for makeApiClient, which the agent never calls:
// `npm run build` therefore replaces the compiled copy of this file with a tree-shaken bundle of
// client-node's config module (packaging/kubeconfig-bundle.mjs) that leaves the generated model and API
// classes out. A plain `tsc` build keeps this re-export, which behaves the same and loads more.
export { KubeConfig } from '@kubernetes/client-node/dist/config.js';
