// docs/testing.md names every test tier there is: each `test:*` npm script (package.json) as
// `npm run test:x`, and each folder of test/ as `test/x`, so a tier added without its description fails here.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';

const doc = readFileSync('docs/testing.md', 'utf8');

describe('docs/testing.md', () => {
  it('names every test:* npm script', () => {
    const scripts = Object.keys((JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts);
    const tiers = scripts.filter((s) => s.startsWith('test:') && s !== 'test:jest');
    expect(tiers.length).toBeGreaterThan(3);
    expect(tiers.filter((s) => !doc.includes(`npm run ${s}`))).toEqual([]);
  });

  it('names every folder of test/', () => {
    const folders = readdirSync('test', { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `test/${e.name}`);
    expect(folders.filter((f) => !new RegExp(`${f}\\b`).test(doc))).toEqual([]);
  });
});
