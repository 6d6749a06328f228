// docs/flags.md lists every flag as the flag table (src/config/flags.ts) declares it: the list is generated
// by `npm run docs:flags`, and this test fails when the file and the table differ (a flag added, renamed,
// its default or help changed without rerunning the script), as errors-doc.test.ts does for error codes.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { FLAGS, type FlagSpec } from '../../../src/config/flags.js';
import { FLAGS_DOC_BEGIN, FLAGS_DOC_END, renderFlagsList, spliceFlagsDoc } from '../../../src/config/flags-doc.js';

const doc = readFileSync('docs/flags.md', 'utf8');

describe('docs/flags.md', () => {
  it('holds the list the flag table renders (run `npm run docs:flags` after changing src/config/flags.ts)', () => {
    expect(spliceFlagsDoc(doc)).toBe(doc);
  });

  it('names every flag but the harness-only ones, each once, with its FLANNELD_ variable', () => {
    const listed = doc.slice(doc.indexOf(FLAGS_DOC_BEGIN), doc.indexOf(FLAGS_DOC_END));
    for (const spec of FLAGS) {
      const head = `- \`--${spec.name}\``;
      expect([spec.name, listed.split(head).length - 1]).toEqual([spec.name, spec.harness ? 0 : 1]);
    }
    expect(listed).toContain('`FLANNELD_KUBE_SUBNET_MGR`');
  });

  it('sees a change to the table (the check works)', () => {
    const changed: FlagSpec[] = FLAGS.map((f) => (f.name === 'healthz-port' ? { ...f, default: 10277 } : f));
    expect(spliceFlagsDoc(doc, changed)).not.toBe(doc);
    expect(renderFlagsList(changed)).toContain('default `10277`');
  });

  it('keeps every generated line within 120 columns, and no continuation line starts with list markup', () => {
    expect(
      renderFlagsList()
        .split('\n')
        .filter((l) => l.length > 120),
    ).toEqual([]);
    const spec: FlagSpec = { name: 'x', kind: 'bool', default: false, help: `${'word '.repeat(21)}wordy - a dash at the wrap` };
    const lines = renderFlagsList([spec]).trimEnd().split('\n');
    expect(lines.length).toBe(2);
    expect(lines[1].startsWith('  wordy - a dash')).toBe(true);
  });

  it('refuses a file whose markers are gone instead of appending a second list', () => {
    expect(() => spliceFlagsDoc('# Flags\n')).toThrow(FLAGS_DOC_BEGIN);
  });
});
