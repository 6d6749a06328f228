// Preloaded into a measured process (`node --expose-gc --import bench/lib/mem-probe.mjs dist/main.js ...`,
// started with an IPC channel): on {probe: 'memory'} it runs full GCs and answers process.memoryUsage();
// on {probe: 'cpu'} it answers process.cpuUsage(). It imports nothing, so it adds no module to the figures.
if (process.send) {
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  process.on('message', async (m) => {
    if (m?.probe === 'memory') {
      for (let i = 0; i < 4; i++) {
        globalThis.gc?.();
        await sleep(250);
      }
      const u = process.memoryUsage();
      process.send({ probe: 'memory', rss: u.rss, heapUsed: u.heapUsed, heapTotal: u.heapTotal, external: u.external, arrayBuffers: u.arrayBuffers });
    } else if (m?.probe === 'cpu') {
      process.send({ probe: 'cpu', ...process.cpuUsage() });
    }
  });
  // The channel must not keep a process alive that would otherwise exit.
  process.channel?.unref();
}
