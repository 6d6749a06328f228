// Preloaded into a measured process (`node --expose-gc --import bench/lib/mem-probe.mjs dist/main.js ...`,
// started with an IPC channel). Over IPC it answers:
// - {probe: 'memory'}: full GCs, then process.memoryUsage();
// - {probe: 'cpu'}: process.cpuUsage() (user + system µs so far);
// - {probe: 'profile-start'} / {probe: 'profile-stop', file}: a V8 CPU profile of the window between them
//   (node:inspector, the same sampler as `--cpu-prof`), written to `file`. With BENCH_PROFILE_FROM_START=1
//   the profile starts here, before the agent's first module loads (a cold start's profile).
// Its own imports (./settle.mjs, node:inspector and node:fs only when profiling) add no package to the
// figures.
if (process.send) {
  let session;
  const post = (method, params) => new Promise((resolve, reject) => session.post(method, params ?? {}, (err, res) => (err ? reject(err) : resolve(res))));
  const startProfile = async () => {
    const { Session } = await import('node:inspector');
    session = new Session();
    session.connect();
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: Number(process.env.BENCH_PROFILE_INTERVAL_US ?? 500) });
    await post('Profiler.start');
  };
  const stopProfile = async (file) => {
    const { profile } = await post('Profiler.stop');
    session.disconnect();
    session = undefined;
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, JSON.stringify(profile));
  };
  if (process.env.BENCH_PROFILE_FROM_START === '1') await startProfile();
  process.on('message', async (m) => {
    if (m?.probe === 'memory') {
      const { settledMemory } = await import('./settle.mjs');
      process.send({ probe: 'memory', ...(await settledMemory()) });
    } else if (m?.probe === 'cpu') process.send({ probe: 'cpu', ...process.cpuUsage() });
    else if (m?.probe === 'profile-start') {
      await startProfile();
      process.send({ probe: 'profile-start' });
    } else if (m?.probe === 'profile-stop') {
      await stopProfile(m.file);
      process.send({ probe: 'profile-stop' });
    }
  });
  // The channel must not keep a process alive that would otherwise exit.
  process.channel?.unref();
}
