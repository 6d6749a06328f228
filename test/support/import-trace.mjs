// Preload (`node --import ./test/support/import-trace.mjs ...`) that appends the URL of every ES module
// the process resolves to the file named by FLANNEL_IMPORT_TRACE, one per line. A package's entry point
// is resolved as an ES import even when the package is CommonJS (etcd3, winston), so the trace says
// which packages a run loaded. Uses Node's module customization hooks (module.register).
import { register } from 'node:module';

const HOOKS = `
import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(file, r.url + '\\n');
  return r;
}
`;

const file = process.env.FLANNEL_IMPORT_TRACE;
if (file) register('data:text/javascript,' + encodeURIComponent(HOOKS), { data: { file } });
