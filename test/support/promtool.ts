// promtool (prometheus/prometheus cmd/promtool), from Debian's `prometheus` package (.ci/run installs it).
// Without it a promtool case is skipped locally and fails under CI=true.
import { it } from '@jest/globals';
import { spawnSync } from 'node:child_process';

/** The promtool on PATH, if any. */
export function promtool(): string | undefined {
  const r = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() !== '' ? r.stdout.trim() : undefined;
}

/** `it` when promtool is there or CI requires it (the case then fails without it), else `it.skip` with a note. */
export function itWithPromtool(): typeof it {
  if (promtool() || process.env['CI'] === 'true') return it;
  process.stdout.write('promtool not found (apt-get install prometheus): skipping the promtool checks\n');
  return it.skip as unknown as typeof it;
}

/** The promtool to run: throws when there is none (under CI=true, a missing promtool is a failure). */
export function requirePromtool(): string {
  const bin = promtool();
  if (!bin) throw new Error('promtool not found: apt-get install prometheus (CI=true requires it)');
  return bin;
}

/** `promtool check metrics` on an exposition: its exit status and everything it printed. */
export function checkMetrics(exposition: string): { status: number | null; out: string } {
  const r = spawnSync(requirePromtool(), ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}`.trim() };
}
