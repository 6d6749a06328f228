// The Node runtime flags flanneld.exe runs with (its SEA config's execArgv, packaging/build.mjs) and
// the benchmarks measure with (bench/run.mjs, bench/lib/cli-agent.mjs).
//
// --max-semi-space-size=1: cap V8's young generation at 1 MB per semi-space. By default it grows to
// 16 MB per semi-space during start-up (module evaluation, the first list) and is never given back, which
// is about 25 MB of the agent's resident memory; an agent allocates little per event, so the smaller
// young generation costs a few more scavenges and no measurable CPU (README, Performance).
export const RUNTIME_EXEC_ARGV = ['--max-semi-space-size=1'];
