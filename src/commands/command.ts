// Subcommands of flanneld (`flanneld <name> ...`), beside the daemon itself. Each lives in its own
// module under src/commands/ and is loaded only when named, so the daemon's start-up loads none of them.

export interface CommandIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** The process environment (commands may read FLANNELD_* settings through parseConfig). */
  env: Record<string, string | undefined>;
  platform: NodeJS.Platform;
}

export interface Command {
  /** One line for `flanneld --help`. */
  summary: string;
  /** Run with the arguments after the subcommand name; resolves to the exit code. */
  run(args: string[], io: CommandIO): Promise<number>;
}

/** Subcommand name -> module path (relative to this file). */
export const COMMANDS: Record<string, string> = {
  cleanup: './cleanup.js',
  'cluster-config': './cluster-config.js',
  'cni-config': './cni-config.js',
  doctor: './doctor.js',
  'install-cni': './install-cni.js',
  netconf: './netconf.js',
  service: './service.js',
  status: './status.js',
};

export async function loadCommand(name: string): Promise<Command | undefined> {
  const path = COMMANDS[name];
  if (path === undefined) return undefined;
  const mod = (await import(path)) as { command: Command };
  return mod.command;
}
