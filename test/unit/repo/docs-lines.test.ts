// README.md and docs/*.md read well in a terminal: no line longer than 120 characters outside code blocks
// (a Markdown table padded by the formatter to 700 characters a row did not). Wide tables become lists.
import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const MAX = 120;
const FILES = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
];

/** `file:line (length)` for every line over MAX outside fenced code blocks (fences may be indented in lists). */
function longLines(file: string, text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      return;
    }
    if (!fenced && line.length > MAX) out.push(`${file}:${i + 1} (${line.length})`);
  });
  return out;
}

describe('Markdown line length', () => {
  it('the check sees a long line outside a code block and ignores one inside', () => {
    const long = 'x'.repeat(MAX + 1);
    expect(longLines('t.md', `a\n${long}\n`)).toEqual(['t.md:2 (121)']);
    expect(longLines('t.md', `\`\`\`\n${long}\n\`\`\`\n  \`\`\`text\n  ${long}\n  \`\`\`\n`)).toEqual([]);
  });

  it.each(FILES)('%s has no line over 120 characters outside code blocks', (file) => {
    expect(longLines(file, readFileSync(file, 'utf8'))).toEqual([]);
  });

  it('README.md stays an overview of at most 200 lines: the manual, the flags and the design live in docs/', () => {
    expect(readFileSync('README.md', 'utf8').split('\n').length).toBeLessThanOrEqual(200);
  });

  it('the benchmark tables live in docs/performance.md and the README links troubleshooting near the top', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).not.toContain('### Churn (5,000 nodes)');
    expect(readFileSync('docs/performance.md', 'utf8')).toContain('## Churn (5,000 nodes)');
    const top = readme.split('\n## ')[0];
    for (const doc of ['docs/troubleshooting.md', 'docs/errors.md', 'docs/performance.md']) expect(top).toContain(`(${doc})`);
  });
});
