// Every family the agent's /metrics has is documented in docs/metrics.md: the flannel_* families of
// src/basics/metrics.ts (FAMILIES, each registered from the start) by name, and prom-client's default process
// and Node.js families, which the agent registers too (Metrics({ process: true }), src/main.ts), by prefix.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { METRIC, Metrics } from '../../../src/basics/metrics.js';

describe('docs/metrics.md', () => {
  it('names every family the agent exports', async () => {
    const text = await new Metrics({ process: true }).render();
    const families = [...new Set([...text.matchAll(/^# TYPE (\w+) /gm)].map((m) => m[1]))];
    const ours = families.filter((f) => f.startsWith('flannel_'));
    expect(ours.sort()).toEqual(Object.values(METRIC).sort());
    const doc = readFileSync('docs/metrics.md', 'utf8');
    // As `name` or `name{label,...}`, in code.
    expect(ours.filter((f) => !new RegExp(`\`${f}(\\{[a-z,]+\\})?\``).test(doc))).toEqual([]);
    const defaults = [...new Set(families.filter((f) => !f.startsWith('flannel_')).map((f) => f.slice(0, f.indexOf('_') + 1)))].sort();
    expect(defaults).toEqual(['nodejs_', 'process_']);
    expect(defaults.filter((prefix) => !doc.includes(`\`${prefix}*\``))).toEqual([]);
  });
});
