// The Node runtime flags flanneld.exe runs with (its SEA config's execArgv, packaging/build.mjs) and
// the benchmarks measure with (bench/run.mjs, bench/lib/cli-agent.mjs).
//
// --max-semi-space-size=1: cap V8's young generation at 1 MB per semi-space. By default it grows to
// 16 MB per semi-space during start-up (module evaluation, the first list) and never gives it back: about
// 24 MB of the agent's resident memory at zero nodes. Since node events apply only their delta it no
// longer costs CPU under load: with Node's defaults the churn benchmark used 3.9 ms per node event (3.3-3.8 ms with the
// cap) and 16.9% CPU in a 500 updates/s status storm (9.6% with it); only idle CPU is higher with the cap
// (1.1-1.4% against 0.0%). docs/performance.md, Churn; `npm run bench -- --node-defaults` measures without.
//
// --no-memory-reducer: V8's memory reducer takes a process whose allocation rate is low (the agent
// between node events) for idle and starts full mark-compact GCs to shrink its heap, again and again
// while events trickle in. Each marks the whole heap: at 20,000 Nodes (a 60 MB heap) two of them in 20 s
// of 10 node events a second cost about 1 ms of CPU per event (perf: mark-compact, concurrent marking and
// sweeping), half of what the agent spent. Without it the churn benchmark's CPU per node event at 20k fell
// from 2.87 to 1.45 ms, and RSS after the list did not grow (106.6 -> 107.5 MB at 5k, 166.6 -> 143.4 MB
// at 20k): the heap is still collected when it grows. docs/performance.md, "Steady state, profiled with perf".
export const RUNTIME_EXEC_ARGV = ['--max-semi-space-size=1', '--no-memory-reducer'];
