// The same-run floor of one wakeup: a Node process that does nothing but wake on a timer every 100 ms
// (the rate of the churn benchmark's node events) and answers, over IPC, its CPU per wakeup. A node event
// that the agent writes to the dataplane wakes it twice, once for the watch line and once when the
// asynchronous HNS call returns (hcsshim's Hcn* calls are blocking Win32 calls: an agent that does not
// stall its event loop on them makes them on another thread and is woken when they return); the bare
// watch wakes once. What one wakeup costs is the machine's (its scheduler, its timers, a VM's exits), and
// it is part of both figures. Argument: the number of wakeups. It says {ready} once started, so that its
// startup is outside the phase it runs in (the churn benchmark's idle phases), waits 200 ms, wakes, and
// answers {report} with {cpuMs, wakeups} once the wakeups are done.
const wakeups = Number(process.argv[2] ?? 30);
let n = 0;
let result;
let asked = false;
const answer = () => process.send(result, () => process.exit(0));
process.on('message', (m) => {
  if (m?.report !== true) return;
  asked = true;
  if (result) answer();
});
setTimeout(() => {
  const c0 = process.cpuUsage();
  const timer = setInterval(() => {
    if (++n < wakeups) return;
    clearInterval(timer);
    const c = process.cpuUsage(c0);
    result = { cpuMs: (c.user + c.system) / 1000, wakeups };
    if (asked) answer();
  }, 100);
}, 200);
process.send({ ready: true });
