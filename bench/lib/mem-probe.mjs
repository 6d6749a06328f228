// Preloaded into a measured process (`node --expose-gc --import bench/lib/mem-probe.mjs dist/main.js ...`,
// started with an IPC channel): on {probe: 'memory'} it runs full GCs and answers process.memoryUsage().
// It imports only ./settle.mjs, so it adds no package to the figures.
if (process.send) {
  const { settledMemory } = await import('./settle.mjs');
  process.on('message', async (m) => {
    if (m?.probe === 'memory') process.send({ probe: 'memory', ...(await settledMemory()) });
  });
  // The channel must not keep a process alive that would otherwise exit.
  process.channel?.unref();
}
