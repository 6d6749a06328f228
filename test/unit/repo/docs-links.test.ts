// Every relative link in README.md and docs/*.md points at a file or folder that exists, and every
// `#anchor` on a Markdown file names one of its headings (GitHub's slugs), so moving a section between
// files cannot leave a dead link behind. Links to the web (`https://...`) are not followed.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

const FILES = [
  'README.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
  ...readdirSync('docs/adr')
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs/adr', f)),
];

/** Text outside fenced code blocks and inline code spans, where a `[x](y)` is a link. */
function prose(text: string): string {
  let fenced = false;
  return text
    .split('\n')
    .filter((line) => {
      if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
      return !fenced && !/^\s*(```|~~~)/.test(line);
    })
    .join('\n')
    .replace(/`[^`]*`/g, '');
}

/** GitHub's heading anchor: lower case, punctuation dropped but `-` and `_`, spaces become `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8');
  const headings = [...prose(text.replace(/`([^`]*)`/g, '$1')).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]));
  return new Set(headings);
}

function links(text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

/** `file -> target` for each relative link whose file or anchor does not exist. */
function deadLinks(file: string, text = readFileSync(file, 'utf8')): string[] {
  const dead: string[] = [];
  for (const link of links(text)) {
    if (/^[a-z]+:/i.test(link)) continue;
    const [path, anchor] = link.split('#');
    const target = path === '' ? file : normalize(join(dirname(file), path));
    if (!existsSync(target)) {
      dead.push(`${file} -> ${link}`);
      continue;
    }
    if (anchor !== undefined && statSync(target).isFile() && target.endsWith('.md') && !anchors(target).has(anchor)) {
      dead.push(`${file} -> ${link} (no such heading)`);
    }
  }
  return dead;
}

describe('relative links in README.md and docs/', () => {
  it('the check sees a missing file and a missing heading, and follows a good link', () => {
    expect(slug('6. etcd (without `--kube-subnet-mgr`)'.replace(/`/g, ''))).toBe('6-etcd-without---kube-subnet-mgr');
    expect(anchors('docs/install.md')).toContain('commands');
    const text = '[a](docs/install.md#commands) [b](docs/nope.md) [c](docs/install.md#nope) `[d](nope.md)` [e](https://x/y)\n';
    expect(deadLinks('README.md', text)).toEqual(['README.md -> docs/nope.md', 'README.md -> docs/install.md#nope (no such heading)']);
  });

  it.each(FILES)('%s links only to files and headings that exist', (file) => {
    expect(deadLinks(file)).toEqual([]);
  });
});
