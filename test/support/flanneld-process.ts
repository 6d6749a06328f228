// The built daemon (dist/main.js) as a child process, for tests that need a real second process (the
// agent lock) or the whole output of one (secrets): stderr collected, exit awaited, killed on timeout.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export const MAIN = join(process.cwd(), 'dist', 'main.js');

export interface FlanneldProcess {
  pid: number;
  stderr: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<number | null>;
}

export function startFlanneld(args: string[], env: Record<string, string>, timeoutMs = 30_000): FlanneldProcess {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    }),
  );
  return {
    pid: child.pid!,
    stderr: () => stderr,
    exited,
    stop: () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}
