// `npm run docs:flags`: rewrites the generated flag list in docs/flags.md from the flag table
// (src/config/flags.ts, through the build in dist/); test/unit/repo/flags-doc.test.ts checks the file is current.
import { readFileSync, writeFileSync } from 'node:fs';
import { spliceFlagsDoc } from '../dist/config/flags-doc.js';

const file = 'docs/flags.md';
const before = readFileSync(file, 'utf8');
const after = spliceFlagsDoc(before);
if (after === before) {
  console.log(`${file} is up to date`);
} else {
  writeFileSync(file, after);
  console.log(`${file} rewritten from src/config/flags.ts`);
}
