// How tests pick a server's port (test/support/free-port.ts): never one the kernel hands out by itself,
// which another jest worker's listen(0) or connect() can be given once it is closed, and never the same
// port twice in one worker while the first may still be in use.
import { describe, expect, it } from '@jest/globals';
import { ephemeralLow, freePort } from '../../support/free-port.js';

describe('freePort', () => {
  it('gives ports below the ephemeral range, which no listen(0) or connect() is given', async () => {
    const low = ephemeralLow();
    for (let i = 0; i < 20; i++) expect(await freePort()).toBeLessThan(low);
  });

  it('gives a different port each time', async () => {
    const ports = [];
    for (let i = 0; i < 50; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
  });
});
