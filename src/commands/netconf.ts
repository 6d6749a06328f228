// `flanneld netconf set-vni`: move a cluster's shared net-conf.json to the VNI and UDP port Windows takes
// (VNI 4096 and port 4789 by default; another port needs HNS 10.3 on every Windows node) by editing
// Backend.VNI and Backend.Port only (src/subnet/net-conf-edit.ts). Reads the
// kube-flannel-cfg ConfigMap (`kubectl get cm -o json` or `-o yaml`) or a bare net-conf.json from a file
// or stdin; writes the result to stdout or -o (atomically); --dry-run prints a diff of net-conf.json and
// writes nothing. Runs on any OS and touches neither the API server nor the dataplane:
//   kubectl -n kube-flannel get cm kube-flannel-cfg -o yaml | flanneld netconf set-vni | kubectl apply -f -
import { parseFlags, renderUsage, type FlagSpec } from '../config/flags.js';
import { FlagError, errorMessage } from '../basics/errors.js';
import { writeFileAtomicSync } from '../basics/fs.js';
import { parseNetConf } from '../subnet/net-conf.js';
import { DEFAULT_VXLAN_PORT } from '../subnet/net-conf-types.js';
import { lineDiff, setVni } from '../subnet/net-conf-edit.js';
import type { Command, CommandIO } from './command.js';
import { readFileFlag, reportError } from './cni-flags.js';

const NETCONF_FLAGS: readonly FlagSpec[] = [
  { name: 'vni', kind: 'int', default: 4096, help: 'Backend.VNI to set (4096..65535: HNS and kube-proxy carry it as a 16-bit IsolationId)', valueName: 'N', noEnv: true },
  {
    name: 'port',
    kind: 'int',
    default: DEFAULT_VXLAN_PORT,
    help: `Backend.Port to set (1..65535; Windows nodes need HNS 10.3, Windows Server 2022 or newer, for a port other than ${DEFAULT_VXLAN_PORT})`,
    valueName: 'N',
    noEnv: true,
  },
  { name: 'file', kind: 'string', default: '-', help: 'the ConfigMap (JSON or YAML) or net-conf.json to read; - reads stdin', valueName: 'FILE', aliases: ['f'], noEnv: true },
  { name: 'output', kind: 'string', default: '', help: 'write the result to this file (atomically) instead of stdout', valueName: 'FILE', aliases: ['o'], noEnv: true },
  { name: 'dry-run', kind: 'bool', default: false, help: 'print a diff of net-conf.json and write nothing', noEnv: true },
  { name: 'help', kind: 'bool', default: false, help: 'print this message', aliases: ['h'], noEnv: true },
];

const SUMMARY = 'edit Backend.VNI and Backend.Port of a net-conf.json or the kube-flannel-cfg ConfigMap, keeping every other key (set-vni)';

function usage(): string {
  const flags = renderUsage('flanneld netconf set-vni', NETCONF_FLAGS)
    .replace(/^Usage:.*\n\n/, '')
    .replace(/\nEnvironment:.*\n$/, '\n');
  return (
    `Usage: flanneld netconf set-vni [OPTION]...\n\n${SUMMARY}.\n\n${flags}\n` +
    'Example (the shared ConfigMap of a mixed Linux/Windows cluster):\n' +
    '  kubectl -n kube-flannel get cm kube-flannel-cfg -o yaml > cm.yaml\n' +
    '  flanneld netconf set-vni -f cm.yaml --dry-run\n' +
    '  flanneld netconf set-vni -f cm.yaml -o cm-4096.yaml && kubectl apply -f cm-4096.yaml\n'
  );
}

const show = (v: unknown) => (v === undefined ? '(unset)' : JSON.stringify(v));

export const command: Command = {
  summary: SUMMARY,
  run(args: string[], io: CommandIO): Promise<number> {
    const program = 'flanneld netconf';
    try {
      const [verb, ...rest] = args;
      if (verb === undefined || verb === '-h' || verb === '--help' || verb === 'help') {
        io.stdout(usage());
        return Promise.resolve(0);
      }
      if (verb !== 'set-vni') throw new FlagError('FLANNEL_ERR_FLAG', `unknown netconf command "${verb}": want set-vni`, { verb });
      const parsed = parseFlags(rest, NETCONF_FLAGS);
      if (parsed.help) {
        io.stdout(usage());
        return Promise.resolve(0);
      }
      const get = (name: string) => parsed.values.get(name) ?? NETCONF_FLAGS.find((f) => f.name === name)!.default;
      const vni = Number(get('vni'));
      const port = Number(get('port'));
      if (!Number.isInteger(vni) || vni < 4096 || vni > 65535) {
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${vni}" for flag -vni: Windows needs 4096..65535 (HNS and kube-proxy carry it as a 16-bit IsolationId)`, {
          flag: 'vni',
        });
      }
      if (!Number.isInteger(port) || port < 1 || port > 65535)
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${port}" for flag -port: want a UDP port, 1..65535`, { flag: 'port' });
      if (port !== DEFAULT_VXLAN_PORT) {
        io.stderr(
          `note: port ${port} is not ${DEFAULT_VXLAN_PORT}: every Windows node needs HNS 10.3 or newer (Windows Server 2022 or newer; flanneld refuses it below with FLANNEL_ERR_HNS_VERSION), and every node must accept inbound UDP ${port} from the others\n`,
        );
      }
      const file = String(get('file'));
      const input = readFileFlag(file);
      const result = setVni(input, { vni, port });
      const changed = result.text !== input;
      io.stderr(
        changed
          ? `${result.source}: Backend.VNI ${show(result.before.vni)} -> ${vni}, Backend.Port ${show(result.before.port)} -> ${port}; every other key kept\n`
          : `${result.source}: already Backend.VNI ${vni} and Port ${port}; nothing to change\n`,
      );
      try {
        parseNetConf(result.netConf);
      } catch (err) {
        io.stderr(`warning: the Windows agent will still refuse this net-conf.json: ${errorMessage(err)}\n`);
      }
      if (parsed.values.get('dry-run') === true) {
        io.stdout(lineDiff(result.netConfBefore, result.netConf, ['a/net-conf.json', 'b/net-conf.json']));
        return Promise.resolve(0);
      }
      const out = String(get('output'));
      if (out) {
        writeFileAtomicSync(out, result.text);
        io.stderr(`wrote ${out}\n`);
      } else {
        io.stdout(result.text);
      }
      return Promise.resolve(0);
    } catch (err) {
      return Promise.resolve(reportError(program, err, io));
    }
  },
};
