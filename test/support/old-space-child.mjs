// Child of test/integration/old-space.test.ts, run with the shipped runtime flags (packaging/runtime-flags.mjs)
// and --expose-gc on the build (dist/): V8 takes its pretenuring decisions only at a scavenge of a young
// generation at its largest size, which the shipped 1 MB semi-space reaches and a test worker's does not.
// Projects a list's Nodes, keeping them across scavenges as a list page does, then as many watch events'
// Nodes again, each dropped at once, and prints how many bytes old space grew by in the second part.
import { getHeapSpaceStatistics } from 'node:v8';
import { annotationKeys } from '../../dist/subnet/kube/annotations.js';
import { normalizeAnnotationPrefix } from '../../dist/config/annotation-prefix.js';
import { projectNode } from '../../dist/subnet/kube/node-list-watch.js';

const prefix = 'flannel.alpha.coreos.com/';
const keys = annotationKeys(normalizeAnnotationPrefix(prefix));
const annotations = {
  [`${prefix}kube-subnet-manager`]: 'true',
  [`${prefix}backend-type`]: 'vxlan',
  [`${prefix}backend-data`]: '{"VNI":4096,"VtepMAC":"0e:2a:0a:00:00:0b"}',
  [`${prefix}public-ip`]: '10.0.0.11',
};
const nodes = Array.from({ length: 5000 }, (_, i) => ({ metadata: { name: `n${i}`, annotations }, spec: { podCIDR: `10.${i >> 8}.${i & 255}.0/24` } }));
const oldSpace = () => {
  globalThis.gc({ type: 'minor' });
  globalThis.gc({ type: 'minor' });
  return getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size;
};

let listed = 0;
for (let page = 0; page < 3; page++) {
  const recs = nodes.map((n) => projectNode(n, keys));
  oldSpace(); // the page's records outlive two scavenges
  listed += recs.length;
}
globalThis.gc();
const before = oldSpace();
let watched = 0;
for (let i = 0; i < 20_000; i++) if (projectNode(nodes[i % nodes.length], keys)?.podCIDR !== undefined) watched++;
process.stdout.write(JSON.stringify({ listed, watched, grownBytes: oldSpace() - before }));
