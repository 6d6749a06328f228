// Where a unit test goes (docs/testing.md, "Test tiers"): every unit test lives in a folder, none directly
// under test/unit/, and the folders mirror the repository: a folder of test/unit/ is a folder of src/ (the
// tests of its modules), a folder of the repository itself (packaging/), or repo/ (the rules over the whole
// repository), so a test filed by habit, or left behind when its module's folder moved, fails here.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const UNIT = 'test/unit';

/** Every folder below test/unit/, as a path relative to it. */
function folders(dir = ''): string[] {
  return readdirSync(join(UNIT, dir), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => [join(dir, e.name), ...folders(join(dir, e.name))]);
}

describe('test/unit/ layout', () => {
  it('holds no file directly: each unit test is in the folder of what it tests', () => {
    expect(readdirSync(UNIT).filter((f) => !statSync(join(UNIT, f)).isDirectory())).toEqual([]);
  });

  it('has only folders that mirror src/, a folder of the repository, or repo/', () => {
    const mirrors = (f: string) => f === 'repo' || existsSync(join('src', f)) || existsSync(f);
    expect(folders().filter((f) => !mirrors(f))).toEqual([]);
  });
});
