// What a watch event leaves in old space under the runtime flags flanneld.exe ships with (a 1 MB young
// generation: packaging/runtime-flags.mjs). V8 allocates the objects of an allocation site in old space once
// that site's objects have survived scavenges (allocation-site pretenuring, decided at a scavenge of a
// young generation at its largest size); a list keeps every Node's record across scavenges, so a record
// made by an object literal was then made in old space for every watch event after it, dead at once
// (docs/performance.md, session 17). The child runs on the build; `npm test` builds first.
import { describe, it, expect } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs packaging script without type declarations
import { RUNTIME_EXEC_ARGV } from '../../packaging/runtime-flags.mjs';

const SHIPPED_FLAGS = RUNTIME_EXEC_ARGV as string[];
const CHILD = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'old-space-child.mjs');

describe('old space under the shipped runtime flags', () => {
  it("keeps 20,000 watch events' Node records out of old space after a list kept 15,000 across scavenges", () => {
    const r = spawnSync(process.execPath, ['--expose-gc', ...SHIPPED_FLAGS, CHILD], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { listed: number; watched: number; grownBytes: number };
    expect(out).toMatchObject({ listed: 15_000, watched: 20_000 });
    // 1.2 MB before the change (the record's site pretenured: about 60 bytes an event), about 12 KB after.
    expect(out.grownBytes).toBeLessThan(256 * 1024);
  });
});
