// The Windows-service side of the install journeys: the release zip unpacked on the journey's node, the
// operator's PowerShell console running docs/install.md's lines (./powershell.ts: scripts/start.ps1
// interpreted whole, the operator's command lines split as PowerShell's argument mode does), and a
// stand-in for flanneld-service.exe and the service control manager behind `flanneld.exe service ...`.
//
// `flanneld.exe service ...` runs src/commands/service.ts in this process as on Windows (platform win32,
// flanneld.exe the single executable), its flanneld-service.exe replaced by ServiceHostStandIn, which does
// what packaging/service-host.c does with the SCM (winsvc.h: CreateServiceW / ChangeServiceConfigW of an
// existing one, StartServiceW, ControlService STOP, DeleteService, QueryServiceStatusEx and
// QueryServiceConfigW) and prints what it prints, with its exit codes (0 ok, 3 not installed). The service
// process is the agent: started from the binary path's --exe and agent flags with the --env pairs, stopped
// by Ctrl+C (SIGINT here) and terminated after 10 s; an agent that exits on its own leaves the service
// STOPPED with its exit code. Not modelled: the SCM's recovery restarts (5 s / 10 s / 30 s) and the log
// file rotation (the agent's log is read from the process, ./sim-node.ts).
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runService } from '../../src/commands/service.js';
import { commandLine, runPowerShell, runScriptFile, type PowerShellHost } from './powershell.js';
import { waitFor } from './wait-for.js';
import { NODE_ADDRESSES, NODE_IP, type JourneyNode, type Ran } from './journey.js';
import type { SimAgent } from './sim-node.js';
import type { DocCommand } from './install-doc.js';

/** Where docs/install.md unpacks the release zip. */
export const INSTALL_DIR = 'C:\\k\\flannel';
const FLANNELD_EXE = `${INSTALL_DIR}\\flanneld.exe`;
/** The node's host name ([System.Net.Dns]::GetHostName(); start.ps1's -NodeName default lowers it). */
const HOST_NAME = 'WIN-1';

interface Service {
  name: string;
  binaryPath: string;
  exe: string;
  env: string[];
  agentArgs: string[];
  state: 'STOPPED' | 'RUNNING';
  agent?: SimAgent;
  exitCode: number;
}

/** CommandLineToArgvW quoting, as service-host.c append_arg builds the binary path. */
function quoteArg(a: string): string {
  if (a !== '' && !/[ \t\n\v"]/.test(a)) return a;
  return `"${a.replace(/(\\*)"/g, '$1$1\\"').replace(/(\\+)$/, '$1$1')}"`;
}

export class ServiceHostStandIn {
  readonly services = new Map<string, Service>();

  constructor(private readonly console: NodeConsole) {}

  /** `flanneld-service.exe <args>`: its output lines go to `out`; resolves to its exit code. */
  async run(args: string[], out: (t: string) => void, err: (t: string) => void): Promise<number> {
    const [verb, ...rest] = args;
    const o = { name: 'flanneld', exe: '', logDir: '', env: [] as string[], agent: [] as string[], opts: [] as string[] };
    for (let i = 0; i < rest.length; i++) {
      const a = rest[i];
      if (a === '--') {
        o.agent = rest.slice(i + 1);
        break;
      }
      const v = rest[++i];
      if (v === undefined) {
        err(`flanneld-service: ${a} needs a value\n`);
        return 2;
      }
      if (a === '--name') o.name = v;
      else if (a === '--exe') o.exe = v;
      else if (a === '--log-dir') o.logDir = v;
      else if (a === '--env') o.env.push(v);
      else if (!['--display-name', '--log-max-mb', '--log-keep', '--timeout'].includes(a)) {
        err(`flanneld-service: unknown option ${a}\n`);
        return 2;
      }
      o.opts.push(a, v);
    }
    const svc = this.services.get(o.name.toLowerCase());
    if (verb !== 'install' && !svc) {
      err(`flanneld-service: service ${o.name} is not installed\n`);
      return 3;
    }
    switch (verb) {
      case 'install': {
        const binaryPath = [`${INSTALL_DIR}\\flanneld-service.exe`, 'run', ...o.opts.filter((x, i) => !(o.opts[i - 1] === '--timeout' || x === '--timeout')), '--', ...o.agent]
          .map(quoteArg)
          .join(' ');
        const next: Service = {
          name: o.name,
          binaryPath,
          exe: o.exe,
          env: o.env,
          agentArgs: o.agent,
          state: svc?.state ?? 'STOPPED',
          agent: svc?.agent,
          exitCode: svc?.exitCode ?? 0,
        };
        this.services.set(o.name.toLowerCase(), next);
        out(svc ? `updated service ${o.name} (restart it to apply)\n` : `installed service ${o.name}\n`);
        out(`binary path: ${binaryPath}\n`);
        return 0;
      }
      case 'start':
        if (svc!.state !== 'RUNNING') this.startProcess(svc!);
        out(`service ${o.name} is RUNNING\n`);
        return 0;
      case 'stop':
        await this.stopProcess(svc!);
        out(`service ${o.name} is STOPPED\n`);
        return 0;
      case 'uninstall':
        await this.stopProcess(svc!);
        this.services.delete(o.name.toLowerCase());
        out(`uninstalled service ${o.name}\n`);
        return 0;
      case 'status': {
        const s = svc!;
        this.refresh(s);
        out(
          `name: ${s.name}\nstate: ${s.state}\npid: ${s.agent?.child.pid ?? 0}\nexit-code: ${s.exitCode === 0 ? 0 : 1066}\nservice-exit-code: ${s.exitCode}\n` +
            `start-type: auto\naccount: LocalSystem\nbinary-path: ${s.binaryPath}\nfailure-reset-seconds: 86400\nfailure-actions: restart/5000 restart/10000 restart/30000\n` +
            'failure-actions-on-non-crash-failures: true\n',
        );
        return 0;
      }
      default:
        err(`flanneld-service: unknown command ${verb}\n`);
        return 2;
    }
  }

  /** An agent that exited on its own: the service is STOPPED with its exit code (service-specific error). */
  private refresh(s: Service): void {
    const code = s.agent?.child.exitCode;
    if (s.state === 'RUNNING' && code !== null && code !== undefined) {
      s.state = 'STOPPED';
      s.exitCode = code;
      s.agent = undefined;
    }
  }

  private startProcess(s: Service): void {
    const env = Object.fromEntries(s.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
    s.agent = this.console.node.startAgent(this.console.build(s.exe), s.agentArgs, env);
    s.state = 'RUNNING';
    s.exitCode = 0;
  }

  private async stopProcess(s: Service): Promise<void> {
    this.refresh(s);
    if (s.state !== 'RUNNING' || !s.agent) return;
    const agent = s.agent;
    agent.child.kill('SIGINT'); // the host's console Ctrl+C
    const timer = setTimeout(() => agent.child.kill('SIGKILL'), 10_000);
    const code = await agent.exited;
    clearTimeout(timer);
    this.console.node.note(`--- service ${s.name} stopped (agent exit ${code})`);
    s.state = 'STOPPED';
    s.agent = undefined;
  }

  /** The running agent of a service. */
  agentOf(name = 'flanneld'): SimAgent | undefined {
    const s = this.services.get(name.toLowerCase());
    if (s) this.refresh(s);
    return s?.agent;
  }
}

/**
 * The operator's PowerShell console on the node, in C:\k\flannel with that folder on PATH: the release zip
 * unpacked there (flanneld.exe the built CLI of `main`, flanneld-service.exe the stand-in, scripts\start.ps1
 * the repository's), the docs' lines run as PowerShell runs them.
 */
export class NodeConsole {
  readonly scm = new ServiceHostStandIn(this);
  /** Windows path of an installed flanneld.exe -> the build it is. */
  private readonly installed = new Map<string, string>();
  /** What the console printed. */
  readonly output: string[] = [];

  constructor(
    readonly node: JourneyNode,
    main: string,
  ) {
    this.unpack(main);
  }

  /** Unpack the release zip (of the build `main`) into C:\k\flannel, over what is there. */
  unpack(main: string): void {
    const dir = this.node.onHost(INSTALL_DIR);
    mkdirSync(join(dir, 'scripts'), { recursive: true });
    writeFileSync(join(dir, 'flanneld.exe'), 'the Windows build; the journey runs the built CLI');
    writeFileSync(join(dir, 'flanneld-service.exe'), 'the service host; the journey runs ServiceHostStandIn');
    copyFileSync(join(process.cwd(), 'scripts', 'start.ps1'), join(dir, 'scripts', 'start.ps1'));
    this.installed.set(FLANNELD_EXE.toLowerCase(), main);
  }

  /** The build an installed flanneld.exe is. */
  build(exe: string): string {
    const main = this.installed.get(exe.toLowerCase());
    if (!main) throw new Error(`${exe} is not the flanneld.exe of an unpacked release`);
    return main;
  }

  /** The PowerShell host: the node's files, network, clock, and flanneld.exe. */
  private host(): PowerShellHost {
    return {
      env: { ...this.node.nodeEnv(), PATH: INSTALL_DIR },
      files: this.node.onHost,
      hostName: HOST_NAME,
      write: (line) => this.output.push(line),
      fetch: async (url) => {
        const r = await fetch(this.node.nodeUrl(url), { signal: AbortSignal.timeout(5_000) });
        return { status: r.status, body: await r.text() };
      },
      // The script polls the agent: go on once the agent did something (a log line, its exit), or the seconds passed.
      sleep: async (seconds) => {
        const agent = this.scm.agentOf();
        const seen = agent?.lines.length ?? 0;
        await waitFor(() => !agent || agent.lines.length > seen || agent.child.exitCode !== null, 'the agent to log', seconds * 1000).catch(() => undefined);
      },
      run: (program, args) => this.flanneld(program, args),
    };
  }

  /** A native command of the console: only flanneld.exe (on PATH, or by its path). */
  private async flanneld(program: string, args: string[]): Promise<{ code: number; stdout: string }> {
    const exe = /^flanneld(\.exe)?$/i.test(program) ? FLANNELD_EXE : program;
    const main = this.build(exe);
    if (args[0] === 'service') {
      let stdout = '';
      let stderr = '';
      const io = { stdout: (t: string) => void (stdout += t), stderr: (t: string) => void (stderr += t), env: this.node.nodeEnv(), platform: 'win32' as const };
      const code = await runService(args.slice(1), io, {
        execPath: exe,
        mainScript: exe,
        isSea: () => Promise.resolve(true),
        exists: (f) => existsSync(this.node.onHost(f)),
        runHost: (_host, hostArgs) => this.scm.run(hostArgs, io.stdout, io.stderr),
      });
      this.node.note(`--- flanneld.exe ${args.join(' ')} (exit ${code})\n${stdout}${stderr}`);
      return { code, stdout };
    }
    const r: Ran = await this.node.run(main, args);
    return { code: r.code, stdout: r.stdout };
  }

  /**
   * Run one documented PowerShell line: a script (`...\start.ps1 -Param value`) or flanneld.exe with its
   * arguments as argument mode splits them, anything else through the interpreter. Resolves to the exit
   * code; a script's throw rejects.
   */
  async step(cmd: DocCommand | string): Promise<number> {
    const text = typeof cmd === 'string' ? cmd : cmd.text;
    const host = this.host();
    const head = text.split(/\s+/)[0];
    if (/\.ps1$/i.test(head)) {
      const { program, args } = commandLine(text);
      return runScriptFile(this.node.onHost(program), program, args, host);
    }
    if (/^(.*\\)?flanneld(\.exe)?$/i.test(head)) {
      const { program, args } = commandLine(text);
      const r = await this.flanneld(
        program,
        args.map((a) => (a.param !== undefined ? a.param : Array.isArray(a.value) ? a.value.join(',') : (a.value ?? ''))),
      );
      if (r.stdout) this.output.push(r.stdout);
      return r.code;
    }
    return runPowerShell(text, host);
  }

  /**
   * Run a journey's documented lines (journeySteps) in order, each to exit 0, skipping the ones
   * NOT_EXECUTED names; the example's node address is this node's (NODE_ADDRESSES). `before` runs before
   * each step (what the docs say in prose between two commands). The failing one throws with the transcript.
   */
  async runSteps(steps: (DocCommand & { skip?: string })[], before?: (s: DocCommand) => void): Promise<void> {
    for (const s of steps) {
      if (s.skip) continue;
      before?.(s);
      const text = NODE_ADDRESSES.reduce((t, a) => t.split(a).join(NODE_IP), s.text);
      const failed = (what: string) => new Error(`${s.file}:${s.line} \`${s.text}\` ${what}\n${this.output.join('\n')}\n${this.node.dump()}`);
      const code = await this.step(text).catch((err: Error) => {
        throw failed(`failed: ${err.message}`);
      });
      if (code !== 0) throw failed(`exited ${code}`);
    }
  }

  /** The flanneld service's agent, once ready. */
  async serviceReady(): Promise<SimAgent> {
    const agent = this.scm.agentOf();
    if (!agent) throw new Error(`the flanneld service does not run\n${this.output.join('\n')}\n${this.node.dump()}`);
    await this.node.agentReady(agent);
    return agent;
  }
}
