// The Node runtime flags flanneld.exe runs with (its SEA config's execArgv, packaging/build.mjs) and
// the benchmarks measure with (bench/run.mjs, bench/lib/cli-agent.mjs).
//
// --max-semi-space-size=1: cap V8's young generation at 1 MB per semi-space. By default it grows to
// 16 MB per semi-space during start-up (module evaluation, the first list) and never gives it back: about
// 24 MB of the agent's resident memory at zero nodes. Since node events apply only their delta it no
// longer costs CPU under load: with Node's defaults the churn benchmark used 3.9 ms per node event (3.3-3.8 ms with the
// cap) and 16.9% CPU in a 500 updates/s status storm (9.6% with it); only idle CPU is higher with the cap
// (1.1-1.4% against 0.0%). docs/performance.md, Churn; `npm run bench -- --node-defaults` measures without.
export const RUNTIME_EXEC_ARGV = ['--max-semi-space-size=1'];
