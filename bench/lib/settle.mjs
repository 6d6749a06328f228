// Full GCs with pauses between them, then process.memoryUsage(): how every memory figure of the bench is
// taken (the process must run with --expose-gc). Imports nothing, so it adds no module to what it measures.
export async function settledMemory(rounds = 4, pauseMs = 250) {
  for (let i = 0; i < rounds; i++) {
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, pauseMs));
  }
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers };
}
