// The install paths as docs/install.md (and deploy/README.md, where install.md defers to it) write them:
// the commands of their fenced `sh` / `powershell` blocks, and the commands an install path's bullet names
// in inline code, found by section heading, in document order. The journey tests
// (test/integration/journey-*.test.ts) run exactly these, so a documented step that changes changes what
// a journey runs; a step no journey can run on Linux is in NOT_EXECUTED with the reason, and a step that
// is neither fails journey-docs.test.ts (and the journey that claims its section).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const INSTALL_MD = 'docs/install.md';
export const DEPLOY_README = 'deploy/README.md';

/** One command line of a document: continuation lines joined, comments removed. */
export interface DocCommand {
  file: string;
  /** The nearest heading above it, without the #s. */
  section: string;
  /** 1-based line where the command starts. */
  line: number;
  /** `sh`, `powershell`, or `inline` for a command named in inline code. */
  lang: string;
  text: string;
}

/** A fenced block: its info string, first line (1-based, the line after the fence) and text. */
export interface DocBlock {
  file: string;
  section: string;
  line: number;
  lang: string;
  text: string;
}

const read = (file: string): string[] => readFileSync(join(process.cwd(), file), 'utf8').split('\n');

/** Every fenced block of a Markdown file (fences may be indented in lists), with the heading above it. */
export function docBlocks(file: string): DocBlock[] {
  const lines = read(file);
  const out: DocBlock[] = [];
  let section = '';
  for (let i = 0; i < lines.length; i++) {
    const heading = /^#{1,6} (.*)$/.exec(lines[i]);
    if (heading) section = heading[1].trim();
    const fence = /^(\s*)```(\S*)\s*$/.exec(lines[i]);
    if (!fence) continue;
    const indent = fence[1].length;
    const start = i + 1;
    let j = start;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j])) j++;
    out.push({
      file,
      section,
      line: start + 1,
      lang: fence[2],
      text: lines
        .slice(start, j)
        .map((l) => l.slice(Math.min(indent, /^\s*/.exec(l)![0].length)))
        .join('\n'),
    });
    i = j;
  }
  return out;
}

/** A shell or PowerShell comment: `#` at the start or after a blank, outside quotes. */
function stripComment(line: string): string {
  let quote = '';
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) return line.slice(0, i).trimEnd();
  }
  return line.trimEnd();
}

/** The command lines of a shell or PowerShell block (`\` and `` ` `` continuations joined). */
export function blockCommands(block: DocBlock): DocCommand[] {
  const out: DocCommand[] = [];
  const lines = block.text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let text = stripComment(lines[i]);
    const line = block.line + i;
    while (/(\s\\|\s`)$/.test(text) && i + 1 < lines.length) text = text.slice(0, -1).trimEnd() + ' ' + stripComment(lines[++i]).trim();
    if (text.trim() !== '') out.push({ file: block.file, section: block.section, line, lang: block.lang, text: text.trim() });
  }
  return out;
}

/** The commands of every `sh` / `powershell` block of a file. */
export function fencedCommands(file: string): DocCommand[] {
  return docBlocks(file)
    .filter((b) => b.lang === 'sh' || b.lang === 'powershell')
    .flatMap(blockCommands);
}

/** Programs whose inline code in an install path's bullet is a step (not a file or flag named in prose). */
const INLINE_COMMAND = /^(flanneld(\.exe)? |kubectl |Stop-Service |C:\\k\\nssm\.exe )/;

/**
 * The commands named in inline code by the list item of `section` that starts with `**<bullet>**` (e.g. the
 * "**Windows service**" item of "Upgrading") or with `<bullet>` ("sig-windows-tools HostProcess flannel"),
 * or by its numbered item `<bullet>.` (deploy/README.md's "Removing" steps), in order; PowerShell's `;` separates two commands in one span.
 */
export function inlineCommands(file: string, section: string, bullet: string): DocCommand[] {
  const lines = read(file);
  let current = '';
  let start = -1;
  for (let i = 0; i < lines.length; i++) {
    const heading = /^#{1,6} (.*)$/.exec(lines[i]);
    if (heading) current = heading[1].trim();
    if (current === section && [`- **${bullet}**`, `- ${bullet}`, `${bullet}. `].some((p) => lines[i].startsWith(p))) {
      start = i;
      break;
    }
  }
  if (start < 0) throw new Error(`${file}: no item "${bullet}" under "${section}"`);
  let end = start + 1;
  while (end < lines.length && lines[end] !== '' && !/^(- |\d+\. |#)/.test(lines[end]) && !/^\s*```/.test(lines[end])) end++;
  const text = lines.slice(start, end).join('\n');
  const out: DocCommand[] = [];
  for (const m of text.matchAll(/`([^`]+)`/g)) {
    const line = start + 1 + text.slice(0, m.index).split('\n').length - 1;
    for (const part of m[1].replace(/\s*\n\s*/g, ' ').split(/;\s*/)) {
      if (INLINE_COMMAND.test(part)) out.push({ file, section, line, lang: 'inline', text: part.trim() });
    }
  }
  return out;
}

/**
 * Documented steps no journey runs on Linux, each with the reason. A step matched here is skipped by a
 * journey whose section holds it; every other step of a journey's sections must be one it runs.
 */
export const NOT_EXECUTED: { match: RegExp; why: string }[] = [
  {
    match: /^npm ci && npm run package:windows\b/,
    why: 'builds the Windows zip under Wine (test/windows/package.test.ts); a journey runs the built CLI as flanneld.exe',
  },
  {
    match: /^npm run package:windows && npm run package:image-context$/,
    why: 'builds the Windows zip under Wine and the image context (test/windows/package.test.ts, test/integration/image-context.test.ts)',
  },
  { match: /^npm run package:image-context -- /, why: 'writes the image build context (test/integration/image-context.test.ts); the journeys lay out what the image holds' },
  { match: /^docker buildx build /, why: 'builds and pushes a Windows image: no registry or BuildKit here; the pod sees the image as its sandbox folder' },
  { match: /^npx --yes --package=/, why: 'installs the packed tarball from the npm registry (test/integration/npm-package.test.ts runs the packed flanneld)' },
  {
    match: /^kubectl -n kube-flannel (patch daemonset kube-flannel-ds |delete pod -l app=flannel|rollout restart daemonset kube-flannel-ds)/,
    why: "restarts Linux flannel's pods, which run on Linux nodes, not on the simulated Windows node",
  },
  {
    match: /^flanneld\.exe install-cni (--sdnbridge )?--bin-dir C:\\opt\\cni\\bin --source /,
    why: 'names the real releases by their real SHA-256, which cannot be downloaded here; install-cni.test.ts runs --source/--sha256 on stand-in files',
  },
  { match: /^POD=\$\(kubectl /, why: 'finds the pod in a real cluster; deploy.test.ts runs the doctor recipe the next line execs' },
  { match: /^kubectl -n kube-flannel exec "\$POD" /, why: "kubectl exec into a real pod; deploy.test.ts checks this command against the container's and runs its flags" },
  {
    match: /^kubectl -n kube-flannel rollout status daemonset kube-flannel-ds-windows-cleanup$/,
    why: 'watches the cluster; the journey waits for the cleanup init container to exit instead',
  },
  { match: /^kubectl -n kube-flannel logs -l app=flannel-windows-cleanup /, why: "reads the pods' logs from the cluster; the journey reads the cleanup container's output itself" },
  {
    match: /^Stop-Service flanneld$|^C:\\k\\nssm\.exe remove flanneld confirm$/,
    why: "stops and removes microsoft/SDN's nssm service: the simulated node starts as that install left it, with no old agent running",
  },
  {
    match: /^kubectl -n kube-flannel delete daemonset kube-flannel-ds-windows-amd64$/,
    why: "deletes sig-windows-tools' DaemonSet in the cluster: the simulated node starts as its pod left it, with no old agent running",
  },
  {
    match: /^kubectl delete -k deploy\/overlays\/my-cluster\/cleanup$/,
    why: 'deletes the finished cleanup DaemonSet in the cluster; its `done` container only waits and changes nothing on the node',
  },
];

/** Why a step is not executed, or undefined when a journey must run it. */
export function notExecuted(cmd: DocCommand): string | undefined {
  return NOT_EXECUTED.find((n) => n.match.test(cmd.text))?.why;
}

/** Where a journey takes its steps from: fenced commands of a section, or the inline ones of a bullet. */
export type Claim = { file: string; section: string; match?: RegExp } | { file: string; section: string; bullet: string };

/** Each journey: its test file and the documented steps it runs, in this order. */
export const JOURNEYS: Record<string, { file: string; claims: Claim[] }> = {
  'daemonset-host-gw': { file: 'test/integration/journey-daemonset.test.ts', claims: [{ file: INSTALL_MD, section: '4b. flanneld as a HostProcess DaemonSet' }] },
  'daemonset-vxlan': {
    file: 'test/integration/journey-daemonset.test.ts',
    claims: [
      { file: INSTALL_MD, section: '2. The net-conf (vxlan)' },
      { file: INSTALL_MD, section: '4b. flanneld as a HostProcess DaemonSet' },
    ],
  },
  'daemonset-dual-stack': { file: 'test/integration/journey-daemonset.test.ts', claims: [{ file: INSTALL_MD, section: '4b. flanneld as a HostProcess DaemonSet' }] },
  'daemonset-upgrade': {
    file: 'test/integration/journey-upgrade.test.ts',
    claims: [
      { file: INSTALL_MD, section: '4b. flanneld as a HostProcess DaemonSet' },
      { file: INSTALL_MD, section: 'Upgrading', bullet: 'DaemonSet' },
    ],
  },
  'service-upgrade': {
    file: 'test/integration/journey-upgrade.test.ts',
    claims: [
      { file: INSTALL_MD, section: '4a. flanneld as a Windows service', match: /start\.ps1/ },
      { file: INSTALL_MD, section: 'Upgrading', bullet: 'Windows service' },
    ],
  },
  'service-uninstall': {
    file: 'test/integration/journey-uninstall.test.ts',
    claims: [
      { file: INSTALL_MD, section: '4a. flanneld as a Windows service', match: /start\.ps1/ },
      { file: INSTALL_MD, section: 'Uninstalling', bullet: 'Windows service' },
    ],
  },
  'daemonset-uninstall': {
    file: 'test/integration/journey-uninstall.test.ts',
    claims: [
      { file: INSTALL_MD, section: '4b. flanneld as a HostProcess DaemonSet' },
      { file: DEPLOY_README, section: 'Removing', bullet: '1' },
      { file: DEPLOY_README, section: 'Removing' },
      { file: DEPLOY_README, section: 'Removing', bullet: '3' },
    ],
  },
  'service-start-ps1': { file: 'test/integration/journey-service.test.ts', claims: [{ file: INSTALL_MD, section: '4a. flanneld as a Windows service', match: /start\.ps1/ }] },
  'service-by-hand': {
    file: 'test/integration/journey-service.test.ts',
    claims: [
      { file: INSTALL_MD, section: '3. The CNI plugins', match: /mirror\.example/ },
      { file: INSTALL_MD, section: '4a. flanneld as a Windows service', match: /service install/ },
    ],
  },
  'service-dual-stack': {
    file: 'test/integration/journey-service.test.ts',
    claims: [
      { file: INSTALL_MD, section: 'Dual-stack (IPv4 + IPv6)', match: /-NetworkMode l2bridge/ },
      // Run again on the node start.ps1 set up: the same plugins, sdnbridge.exe included, nothing rewritten.
      { file: INSTALL_MD, section: '3. The CNI plugins', match: /install-cni --pinned --sdnbridge/ },
    ],
  },
  'service-ipv4-only': { file: 'test/integration/journey-service.test.ts', claims: [{ file: INSTALL_MD, section: 'Dual-stack (IPv4 + IPv6)', match: /-IPv4Only/ }] },
  'migration-upstream-flanneld': {
    file: 'test/integration/journey-migrations.test.ts',
    claims: [
      { file: INSTALL_MD, section: 'Migrating from upstream flanneld on Windows', bullet: 'any' },
      { file: INSTALL_MD, section: '4a. flanneld as a Windows service', match: /start\.ps1/ },
    ],
  },
  'migration-microsoft-sdn': {
    file: 'test/integration/journey-migrations.test.ts',
    claims: [
      { file: INSTALL_MD, section: 'Migrating from upstream flanneld on Windows', bullet: 'microsoft/SDN' },
      { file: INSTALL_MD, section: '4a. flanneld as a Windows service', match: /start\.ps1/ },
    ],
  },
  'migration-sig-windows-tools': {
    file: 'test/integration/journey-migrations.test.ts',
    claims: [
      { file: INSTALL_MD, section: 'Migrating from upstream flanneld on Windows', bullet: 'sig-windows-tools HostProcess flannel' },
      { file: INSTALL_MD, section: '4b. flanneld as a HostProcess DaemonSet' },
    ],
  },
};

function claimed(c: Claim): DocCommand[] {
  if ('bullet' in c) return inlineCommands(c.file, c.section, c.bullet);
  const cmds = fencedCommands(c.file).filter((x) => x.section === c.section);
  if (cmds.length === 0) throw new Error(`${c.file}: no commands under "${c.section}"`);
  if (!c.match) return cmds;
  const blocks = docBlocks(c.file).filter((b) => b.section === c.section && c.match!.test(b.text));
  if (blocks.length === 0) throw new Error(`${c.file}: no block under "${c.section}" matches ${String(c.match)}`);
  return blocks.flatMap(blockCommands);
}

/** A journey's documented steps, each with the reason when it is not executed here. */
export function journeySteps(name: string): (DocCommand & { skip?: string })[] {
  const j = JOURNEYS[name];
  if (!j) throw new Error(`no journey ${name} in test/support/install-doc.ts JOURNEYS`);
  return j.claims.flatMap(claimed).map((c) => ({ ...c, skip: notExecuted(c) }));
}

/** Every command of the journeys' documents that some journey claims. */
export function claimedCommands(): DocCommand[] {
  return Object.values(JOURNEYS).flatMap((j) => j.claims.flatMap(claimed));
}
