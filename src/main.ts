#!/usr/bin/env node
// flanneld entry point: parse flags/env, start the agent, map outcomes to exit codes.
// The only module that calls process.exit (and, through config, reads process.env).
// The agent and the logger are imported only when the daemon runs: `--version`, `--help` and the
// subcommands load neither (see docs/performance.md, What the process loads).
import { systemClock } from './basics/clock.js';
import { COMMANDS, loadCommand } from './commands/command.js';
import { parseConfig } from './config/parse.js';
import { FlagError, FlannelError, errorMessage } from './basics/errors.js';
import { safeText } from './basics/log-safe.js';
import { VERSION } from './basics/version.js';

// Every HNS call runs on a libuv worker thread (so a hung one can time out); 4 workers is too few to
// survive a few hung calls next to DNS and file work. Set before the pool is first used.
process.env['UV_THREADPOOL_SIZE'] ??= '16';

async function main(): Promise<number> {
  const sub = process.argv[2];
  if (sub !== undefined && !sub.startsWith('-')) {
    const command = await loadCommand(sub);
    if (command) {
      return command.run(process.argv.slice(3), {
        stdout: (t) => process.stdout.write(t),
        stderr: (t) => process.stderr.write(t),
        env: process.env,
        platform: process.platform,
      });
    }
  }
  let parsed;
  try {
    parsed = parseConfig(process.argv.slice(2), process.env, { platform: process.platform });
  } catch (err) {
    if (err instanceof FlagError) {
      process.stderr.write(`flanneld: ${safeText(err.message)}\nRun 'flanneld --help' for usage.\n`);
      return 2;
    }
    process.stderr.write(`flanneld: ${safeText(errorMessage(err))}${err instanceof FlannelError ? ` (${err.code})` : ''}\n`);
    return err instanceof FlannelError ? 2 : 1;
  }
  if (parsed.kind === 'help') {
    const lines = ['', 'Commands (flanneld COMMAND --help for their options):'];
    const width = Math.max(12, ...Object.keys(COMMANDS).map((n) => n.length + 2));
    for (const name of Object.keys(COMMANDS)) lines.push(`  ${name.padEnd(width)}${(await loadCommand(name))?.summary ?? ''}`);
    process.stdout.write(parsed.text + lines.join('\n') + '\n');
    return 0;
  }
  if (parsed.kind === 'version') {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const config = parsed.config;
  const { createLogger } = await import('./basics/log.js');
  const log = createLogger({ level: config.logLevel, format: config.logFormat, file: config.logFile || undefined });
  log.info('flanneld-windows starting', { version: VERSION, dataplane: config.dataplane, pid: process.pid });

  const controller = new AbortController();
  const stop = (sig: string) => {
    if (controller.signal.aborted) return;
    log.info('shutting down', { signal: sig });
    controller.abort(new Error(`received ${sig}`));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));

  try {
    // Loaded here, not at the top: the subcommands (status, cni-config, ...) start without the agent.
    // One import at a time: concurrent import()s sharing a module can deadlock jest's ESM loader.
    const { Agent } = await import('./agent.js');
    const { Metrics } = await import('./basics/metrics.js');
    await new Agent({ config, log, metrics: new Metrics({ process: true }) }).run(controller.signal);
    log.info('stopped');
    return 0;
  } catch (err) {
    const fields = err instanceof FlannelError ? { code: err.code, ...err.context } : {};
    log.error(errorMessage(err), fields);
    return 1;
  } finally {
    // The log is flushed, or half a second passed: the process exits either way.
    const flushed = new Promise<void>((resolve) => log.on('finish', () => resolve()));
    log.end();
    await Promise.race([flushed, systemClock.sleep(500)]);
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`flanneld: unexpected error: ${errorMessage(err)}\n`);
    process.exit(1);
  },
);
