// The built CLI (dist/main.js) as a child process: `startFlanneld` for a long-running agent that tests
// need as a real second process (the agent lock) or whose whole output they read (secrets), and
// `runFlanneld` for a command that exits (status, install-cni, ...). Both leave this process's event loop
// free (the fake API server and in-process agents live here), collect the output and kill on timeout.
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

export interface FlanneldRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Run `node dist/main.js ...args` to its exit, with only PATH and `env` in its environment. */
export function runFlanneld(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<FlanneldRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}
