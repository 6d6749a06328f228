// The simulated HNS's CPU in the process that runs it, which on Windows is HNS's process, not the
// caller's: the time spent in its policy store (SimulatedDataplane#modifyNetworkPolicies) and in the
// synchronous part of SimulatedHnsTransport#modifyNetwork before it waits out the modelled latency (the
// request's parse, the handle check, the call's count and fault rules; it also arms the latency's timer).
// CPU time, not wall time: on a loaded machine a wall clock counts the time the process waited for a core
// too, and took 0.25-0.5 ms an event off the agent's figure in runs of the same code. The churn benchmark
// takes both off the agent's figure and off the least writer's (lib/least-writer-child.mjs) alike.
import { SimulatedHnsTransport } from '../../dist/simulator/hns.js';

/** This process's CPU time so far, ms. */
export function cpuNowMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * Time `sim`'s policy store and every SimulatedHnsTransport's modifyNetwork in this process: `storeMs()`
 * and `callMs()` answer the CPU ms so far, `restore()` puts modifyNetwork back.
 */
export function timeSimulatedHns(sim) {
  let storeMs = 0;
  let callMs = 0;
  const modify = sim.modifyNetworkPolicies.bind(sim);
  sim.modifyNetworkPolicies = (...args) => {
    const t = cpuNowMs();
    try {
      return modify(...args);
    } finally {
      storeMs += cpuNowMs() - t;
    }
  };
  const modifyNetwork = SimulatedHnsTransport.prototype.modifyNetwork;
  SimulatedHnsTransport.prototype.modifyNetwork = function (...args) {
    const t = cpuNowMs();
    try {
      return modifyNetwork.apply(this, args);
    } finally {
      callMs += cpuNowMs() - t;
    }
  };
  return {
    storeMs: () => storeMs,
    callMs: () => callMs,
    restore: () => (SimulatedHnsTransport.prototype.modifyNetwork = modifyNetwork),
  };
}
