// A free TCP port on loopback for a server a test starts (API server, etcd, health port).
// Not a port the kernel picks (listen on port 0, then close): the kernel hands a closed ephemeral port to
// the next listen(0) or connect() of any process, so two jest workers can be given the same port, and one
// test talk to the other worker's agent (seen in CI: /readyz 200 from another worker's agent, whose log
// lacked what the test waited for). Ports below the ephemeral range (/proc/sys/net/ipv4/ip_local_port_range,
// Linux's default 32768-60999) come only from an explicit bind, so each jest worker takes its ports from a
// block of its own there, in turn from a random start, skipping a port that is in use.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

const FIRST = 10_000;
const BLOCK = 1_000;

/** The lowest ephemeral port (Linux's default where the file cannot be read). */
export function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > FIRST + BLOCK ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * This process's block: one per jest worker of a run (JEST_WORKER_ID counts from 1), offset by the run's
 * process (the workers' parent) so that two runs on one machine start apart.
 */
function block(): { start: number; size: number } {
  const blocks = Math.floor((ephemeralLow() - FIRST) / BLOCK);
  const worker = Number(process.env['JEST_WORKER_ID'] ?? 0);
  return { start: FIRST + ((worker + process.ppid) % blocks) * BLOCK, size: BLOCK };
}

const mine = block();
let next = Math.floor(Math.random() * mine.size);

function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let tried = 0; tried < mine.size; tried++) {
    const port = mine.start + (next++ % mine.size);
    if (await listens(port)) return port;
  }
  throw new Error(`no free port in ${mine.start}-${mine.start + mine.size - 1}: stop the servers earlier tests left running`);
}
