// docs/simulator.md documents the simulated node's state file as src/simulator declares it: every key of
// the document (DataplaneState), of an adapter (SimAdapter), of a route (SimRoute) and of a `faults` rule
// (FaultRule) is named there in backticks. A key added to the state file without its line fails here.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';

/** The member names of `export interface NAME { ... }` in a source file, read from its text. */
function members(file: string, name: string): string[] {
  const text = readFileSync(file, 'utf8');
  const start = text.indexOf(`export interface ${name} {`);
  expect(start).toBeGreaterThanOrEqual(0);
  const body = text.slice(text.indexOf('{', start) + 1, text.indexOf('\n}', start));
  const withoutComments = body.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return [...withoutComments.matchAll(/^\s*(?:readonly\s+)?(\w+)\??:/gm)].map((m) => m[1]);
}

const doc = readFileSync('docs/simulator.md', 'utf8');

describe('docs/simulator.md', () => {
  it('reads the declarations it checks (the scan works)', () => {
    expect(members('src/simulator/state.ts', 'DataplaneState')).toEqual(expect.arrayContaining(['networks', 'faults', 'hnsInstance']));
    expect(members('src/simulator/faults.ts', 'FaultRule')).toEqual(['op', 'match', 'hresult', 'remaining']);
  });

  it.each([
    ['src/simulator/state.ts', 'DataplaneState'],
    ['src/simulator/state.ts', 'SimAdapter'],
    ['src/simulator/state.ts', 'SimRoute'],
    ['src/simulator/faults.ts', 'FaultRule'],
  ])('names every member of %s %s', (file, name) => {
    expect(members(file, name).filter((m) => !doc.includes(`\`${m}\``))).toEqual([]);
  });
});
