// The Node runtime flags flanneld.exe runs with (its SEA config's execArgv, packaging/build.mjs) and
// the benchmarks measure with (bench/run.mjs, bench/lib/cli-agent.mjs).
//
// --max-semi-space-size=1: cap V8's young generation at 1 MB per semi-space. By default it grows to
// 16 MB per semi-space during start-up (module evaluation, the first list) and never gives it back: about
// 20 MB of the agent's resident memory. The price is more scavenges: while every node event runs a full
// pass, that is +44% CPU per event and +1.6 points in a 500 updates/s status storm (README, Performance,
// Churn; `npm run bench -- --node-defaults` measures without). Re-measure once events apply deltas.
export const RUNTIME_EXEC_ARGV = ['--max-semi-space-size=1'];
