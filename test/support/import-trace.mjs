// Preload (`node --import ./test/support/import-trace.mjs ...`) that appends the URL of every ES module
// the process resolves to the file named by FLANNEL_IMPORT_TRACE, one per line, and at exit the URL of
// every CommonJS module in require.cache (a package a CommonJS module or a createRequire loads, which the
// resolve hook never sees). A package's entry point is resolved as an ES import even when the package is
// CommonJS (etcd3, winston), so the trace says which packages a run loaded. Uses Node's module
// customization hooks (module.register).
import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';

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
if (file) {
  register('data:text/javascript,' + encodeURIComponent(HOOKS), { data: { file } });
  const cache = createRequire(import.meta.url).cache;
  process.on('exit', () =>
    appendFileSync(
      file,
      Object.keys(cache)
        .map((p) => pathToFileURL(p).href + '\n')
        .join(''),
    ),
  );
}
