// The cluster side of the DaemonSet journeys: the operator's shell steps of docs/install.md and
// deploy/README.md run in a checkout (a copy of deploy/), with kubectl's own rendering of the overlays
// (`kubectl kustomize`, the same rendering `kubectl apply -k` sends), and the kubelet running the rendered
// HostProcess pods on the journey's node: init containers in order, then the main container, each
// container's own `powershell.exe ... -Command <script>` interpreted by ./powershell.ts with the
// environment the kubelet gives it (envFrom the rendered ConfigMap, the downward API's fields, explicit
// values; kubernetes pkg/kubelet/kubelet_pods.go makeEnvironmentVariables) and its ConfigMap volume's keys
// as files under the sandbox (pkg/volume/configmap), as HostProcess containers see them under
// $CONTAINER_SANDBOX_MOUNT_POINT (kubernetes.io/docs/tasks/configure-pod-container/create-hostprocess-pod,
// "Volume mounts").
//
// What the cluster holds is the test's: kube-flannel-cfg as the Linux manifest ships it (the fake API
// server serves Nodes only), the kube-system ConfigMaps a kubeadm cluster has (./kube-system-configmaps.ts)
// with kube-proxy's server this cluster's API server, and an image registry mapping each image reference
// to a build of flanneld.
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dumpYaml, loadAllYaml } from '@kubernetes/client-node';
import { KUBE_SYSTEM_CONFIGMAPS } from './kube-system-configmaps.js';
import { runPowerShell } from './powershell.js';
import { NODE, NODE_IP, type JourneyNode, type Ran } from './journey.js';
import type { FakeRelease } from './cni-releases.js';
import type { SimAgent } from './sim-node.js';
import type { DocCommand } from './install-doc.js';

// kubectl's rendering and the manifests' YAML, read field by field (kubectl validated the schema).
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment */
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The Linux manifest's kube-flannel-cfg (flannel-io/flannel Documentation/kube-flannel.yml), with this net-conf. */
export function kubeFlannelCfg(netConf: string): Obj {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'kube-flannel-cfg', namespace: 'kube-flannel', labels: { tier: 'node', 'k8s-app': 'flannel', app: 'flannel' } },
    data: {
      'cni-conf.json':
        '{\n  "name": "cbr0",\n  "cniVersion": "0.3.1",\n  "plugins": [\n    { "type": "flannel", "delegate": { "hairpinMode": true, "isDefaultGateway": true } },\n    { "type": "portmap", "capabilities": { "portMappings": true } }\n  ]\n}\n',
      'net-conf.json': netConf,
    },
  };
}

/** An image: the flanneld build inside it and whether it holds the CNI release files (CNI_PLUGINS=cni-plugins). */
export interface Image {
  main: string;
  plugins?: FakeRelease[];
}

/** A pod the kubelet runs on the node: its sandbox, its containers' exit codes, the agent it started. */
export interface Pod {
  daemonSet: string;
  image: string;
  sandbox: string;
  inits: { name: string; code: number }[];
  agent?: SimAgent;
}

let podSeq = 0;

export class JourneyCluster {
  readonly checkout: string;
  /** kube-flannel-cfg, as the cluster holds it. */
  flannelCfg: Obj;
  /** Image reference -> what the kubelet runs for it. */
  readonly images = new Map<string, Image>();
  /** The pods running on the node, by DaemonSet. */
  readonly pods = new Map<string, Pod>();

  /**
   * `image`: what the admin's $EDITOR sets in the copied overlay (the image built and pushed in step 1, which
   * the journey registers under its reference).
   */
  constructor(
    readonly node: JourneyNode,
    netConf: string,
    private readonly image: { reference: string; image: Image },
  ) {
    this.checkout = join(node.dir, 'checkout');
    mkdirSync(this.checkout, { recursive: true });
    cpSync(join(process.cwd(), 'deploy'), join(this.checkout, 'deploy'), { recursive: true });
    this.flannelCfg = kubeFlannelCfg(netConf);
  }

  private exec(cmd: string, args: string[], stdin = ''): Promise<Ran> {
    return new Promise((resolve, reject) => {
      const child = spawn(cmd, args, { cwd: this.checkout, env: { PATH: process.env['PATH'] ?? '', HOME: this.node.dir } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      child.on('error', reject);
      child.stdin.end(stdin);
      child.on('exit', (code) => {
        this.node.note(`--- ${cmd} ${args.join(' ')} (exit ${code})\n${code === 0 && cmd === 'kubectl' ? '' : stdout}${stderr}`);
        resolve({ code: code ?? -1, stdout, stderr });
      });
    });
  }

  /** `kubectl kustomize DIR`: what `kubectl apply -k DIR` sends. */
  async render(dir: string): Promise<Obj[]> {
    const r = await this.exec('kubectl', ['kustomize', dir]);
    if (r.code !== 0) throw new Error(`kubectl kustomize ${dir} exited ${r.code}: ${r.stderr}`);
    return loadAllYaml(r.stdout) as Obj[];
  }

  /** The admin's `flanneld` on Linux (the npm package's, i.e. the build's CLI), in the checkout. */
  private adminFlanneld(main: string, args: string[], stdin = ''): Promise<Ran> {
    return this.exec(process.execPath, [main, ...args], stdin);
  }

  /**
   * Run one documented operator step (`main` is the admin's flanneld). Throws for a step no journey knows
   * how to run: a new documented step must be taught here or named in NOT_EXECUTED.
   */
  async step(cmd: DocCommand, main: string): Promise<Ran> {
    const t = cmd.text;
    let m: RegExpExecArray | null;
    const file = (f: string) => join(this.checkout, f);
    if ((m = /^kubectl -n kube-flannel get configmap kube-flannel-cfg -o yaml > (\S+)$/.exec(t))) {
      writeFileSync(file(m[1]), dumpYaml(this.flannelCfg));
      return { code: 0, stdout: '', stderr: '' };
    }
    if (/^flanneld netconf set-vni /.test(t)) return this.adminFlanneld(main, t.split(/\s+/).slice(1));
    if ((m = /^kubectl apply -f (\S+)$/.exec(t))) {
      const [o] = loadAllYaml(readFileSync(file(m[1]), 'utf8')) as Obj[];
      if (o['kind'] !== 'ConfigMap' || o['metadata']['name'] !== 'kube-flannel-cfg') throw new Error(`${t}: not kube-flannel-cfg`);
      this.flannelCfg = o;
      return { code: 0, stdout: '', stderr: '' };
    }
    if ((m = /^cp -r (\S+) (\S+) && \$EDITOR (\S+)$/.exec(t))) {
      cpSync(file(m[1]), file(m[2]), { recursive: true });
      if (m[3] !== `${m[2]}/kustomization.yaml`) throw new Error(`${t}: $EDITOR edits ${m[3]}, not the copied overlay's kustomization.yaml`);
      this.setImage(m[2], this.image.reference, this.image.image);
      return { code: 0, stdout: '', stderr: '' };
    }
    if ((m = /^kubectl -n kube-system get configmap kubeadm-config kube-proxy -o yaml \| flanneld cluster-config > (\S+)$/.exec(t))) {
      // This cluster's kube-system ConfigMaps: kube-proxy's kubeconfig names this cluster's API server.
      // A dual-stack cluster's kubeadm-config names both Service ranges (the API server's --service-cluster-ip-range).
      const cms = KUBE_SYSTEM_CONFIGMAPS.replace('https://10.0.0.5:6443', this.node.api.url).replace(
        'serviceSubnet: 10.96.0.0/12',
        this.node.dualStack ? 'serviceSubnet: 10.96.0.0/12,fd00:10:96::/112' : 'serviceSubnet: 10.96.0.0/12',
      );
      const r = await this.adminFlanneld(main, ['cluster-config'], cms);
      if (r.code === 0) writeFileSync(file(m[1]), r.stdout);
      return r;
    }
    if ((m = /^kubectl apply -k (\S+)$/.exec(t))) return this.apply(m[1]);
    if ((m = /^kubectl delete -k (\S+)$/.exec(t))) return this.delete(m[1]);
    if ((m = /^kubectl -n kube-flannel wait --for=delete pod -l app=flannel-windows --timeout=(\d+)s$/.exec(t))) {
      // The pods' deletion completes when the agent has exited (its container stopped).
      const pod = this.pods.get('kube-flannel-ds-windows');
      if (pod?.agent) throw new Error('the agent pod is still running');
      return { code: 0, stdout: '', stderr: '' };
    }
    throw new Error(`${cmd.file}:${cmd.line}: no journey runs the step \`${t}\`: teach test/support/journey-cluster.ts to, or add it to NOT_EXECUTED with the reason`);
  }

  /**
   * Run a journey's documented steps (journeySteps) in order, each to exit 0, skipping the ones NOT_EXECUTED
   * names; the failing one throws with the node's transcript.
   */
  async runSteps(steps: (DocCommand & { skip?: string })[], main: string): Promise<void> {
    for (const s of steps) {
      if (s.skip) continue;
      const r = await this.step(s, main);
      if (r.code !== 0) throw new Error(`${s.file}:${s.line} \`${s.text}\` exited ${r.code}\n${this.node.dump()}`);
    }
  }

  /** The agent pod's containers ran (both init containers exited 0) and the agent is ready. */
  async agentReady(): Promise<SimAgent> {
    const pod = this.pods.get('kube-flannel-ds-windows');
    const inits = pod?.inits.map((i) => `${i.name}=${i.code}`).join(' ');
    if (inits !== 'install-cni-plugins=0 install-cni-config=0' || !pod?.agent) throw new Error(`the agent pod did not start (${inits ?? 'no pod'})\n${this.node.dump()}`);
    await this.node.agentReady(pod.agent);
    return pod.agent;
  }

  /** The admin's $EDITOR on the overlay: its image's name and tag (`images:` of kustomization.yaml). */
  setImage(overlay: string, reference: string, image: Image): void {
    const f = join(this.checkout, overlay, 'kustomization.yaml');
    const [name, tag] = reference.split(/:(?=[^:/]+$)/);
    const text = readFileSync(f, 'utf8')
      .replace(/newName: .*/, `newName: ${name}`)
      .replace(/newTag: .*/, `newTag: '${tag}'`);
    writeFileSync(f, text);
    this.images.set(reference, image);
  }

  /** `kubectl apply -k DIR`: each DaemonSet's pod (re)created on the node, as its rolling update does. */
  private async apply(dir: string): Promise<Ran> {
    const objects = await this.render(dir);
    const configMaps = new Map(objects.filter((o) => o['kind'] === 'ConfigMap').map((o) => [o['metadata']['name'] as string, o['data'] as Record<string, string>]));
    let code = 0;
    for (const ds of objects.filter((o) => o['kind'] === 'DaemonSet')) {
      const name = ds['metadata']['name'] as string;
      const image = ds['spec']['template']['spec']['containers'][0]['image'] as string;
      const running = this.pods.get(name);
      if (running?.image === image) continue; // nothing changed: the pod stays
      if (running) await this.stopPod(name); // RollingUpdate, maxUnavailable 1: the old pod goes first
      const pod = await this.runPod(ds, configMaps);
      if (pod.inits.some((i) => i.code !== 0)) code = 1;
    }
    return { code, stdout: '', stderr: '' };
  }

  /** `kubectl delete -k DIR`: the objects go, and the kubelet stops their pods (SIGTERM to the containers). */
  private async delete(dir: string): Promise<Ran> {
    for (const ds of (await this.render(dir)).filter((o) => o['kind'] === 'DaemonSet')) await this.stopPod(ds['metadata']['name'] as string);
    return { code: 0, stdout: '', stderr: '' };
  }

  async stopPod(name: string): Promise<void> {
    const pod = this.pods.get(name);
    if (!pod) return;
    if (pod.agent) {
      const code = await pod.agent.stop();
      this.node.note(`--- ${name}: the agent container stopped (exit ${code})`);
      pod.agent = undefined;
    }
    this.pods.delete(name);
  }

  /** The container's environment, as the kubelet builds it from envFrom and env (the downward API's fields for this pod). */
  private containerEnv(c: Obj, configMaps: Map<string, Record<string, string>>, podName: string): Record<string, string> {
    const fields: Record<string, string> = { 'spec.nodeName': NODE, 'status.hostIP': NODE_IP, 'metadata.name': podName, 'metadata.namespace': 'kube-flannel' };
    const env: Record<string, string> = {};
    for (const from of (c['envFrom'] ?? []) as Obj[]) {
      const cm = configMaps.get(from['configMapRef']?.['name'] as string);
      if (!cm) throw new Error(`envFrom ${JSON.stringify(from)}: no such ConfigMap in the rendered overlay (the pod would not start)`);
      Object.assign(env, cm);
    }
    for (const e of (c['env'] ?? []) as Obj[]) {
      const path = e['valueFrom']?.['fieldRef']?.['fieldPath'] as string | undefined;
      if (path !== undefined && fields[path] === undefined) throw new Error(`no downward API value for ${path}`);
      env[e['name'] as string] = path !== undefined ? fields[path] : String(e['value']);
    }
    return env;
  }

  /** The kubelet runs the DaemonSet's pod on the node: the sandbox laid out, init containers in order, then the agent. */
  async runPod(ds: Obj, configMaps: Map<string, Record<string, string>>): Promise<Pod> {
    const name = ds['metadata']['name'] as string;
    const spec = ds['spec']['template']['spec'] as Obj;
    const reference = spec['containers'][0]['image'] as string;
    const image = this.images.get(reference);
    if (!image) throw new Error(`the kubelet cannot pull ${reference}: no such image in the journey's registry (${[...this.images.keys()].join(', ')})`);
    const podName = `${name}-${++podSeq}`;
    // HostProcess: the container's own files under C:\C\<sandbox id>.
    const sandbox = `C:\\C\\${podName}`;
    const root = this.node.onHost(sandbox);
    mkdirSync(join(root, 'flanneld'), { recursive: true });
    writeFileSync(join(root, 'flanneld', 'flanneld.exe'), 'the image holds the Windows build here; the journey runs the built CLI');
    if (image.plugins) {
      mkdirSync(join(root, 'cni-plugins'), { recursive: true });
      for (const r of image.plugins) writeFileSync(join(root, 'cni-plugins', r.file), r.data);
    }
    if (spec['automountServiceAccountToken'] !== false) this.node.projectServiceAccount(root);
    for (const v of (spec['volumes'] ?? []) as Obj[]) {
      const cm = v['configMap'];
      if (!cm) throw new Error(`volume ${v['name']}: only ConfigMap volumes are modelled`);
      if (cm['name'] !== 'kube-flannel-cfg') throw new Error(`volume ${v['name']}: ConfigMap ${cm['name']} is not in the cluster`);
    }
    const pod: Pod = { daemonSet: name, image: reference, sandbox, inits: [] };
    this.pods.set(name, pod);
    const mount = (c: Obj) => {
      for (const m of (c['volumeMounts'] ?? []) as Obj[]) {
        const dir = join(root, ...(m['mountPath'] as string).split('/').filter(Boolean));
        mkdirSync(dir, { recursive: true });
        for (const [k, v] of Object.entries((this.flannelCfg['data'] ?? {}) as Record<string, string>)) writeFileSync(join(dir, k), v);
      }
    };
    const run = async (c: Obj, program: (args: string[], env: Record<string, string>) => Promise<number>): Promise<number> => {
      const command = c['command'] as string[];
      if (command[0] !== 'powershell.exe' || command[command.length - 1] !== '-Command') throw new Error(`${c['name']}: not a powershell.exe -Command container`);
      mount(c);
      const env = { CONTAINER_SANDBOX_MOUNT_POINT: sandbox, ...this.containerEnv(c, configMaps, podName) };
      return runPowerShell((c['args'] as string[]).join(' '), {
        env,
        run: (exe, args) => {
          if (!/\\flanneld\\flanneld\.exe$/i.test(exe) || !exe.toLowerCase().startsWith(sandbox.toLowerCase()))
            throw new Error(`${c['name']} runs ${exe}, not the image's flanneld.exe`);
          return program(args, Object.fromEntries(Object.entries(env).map(([k, v]) => [k, this.node.onHost(v)])));
        },
      });
    };
    for (const c of (spec['initContainers'] ?? []) as Obj[]) {
      const code = await run(c, async (args, env) => (await this.node.run(image.main, args, env)).code);
      pod.inits.push({ name: c['name'] as string, code });
      // An init container that fails is retried by the kubelet; the pod never gets to its next container.
      if (code !== 0) return pod;
    }
    for (const c of spec['containers'] as Obj[]) {
      if (!(c['args'] as string[]).join(' ').includes('flanneld.exe')) {
        // deploy/cleanup's `done`: it only waits so that `rollout status` returns (50-cleanup-windows.yml).
        if (!/^Write-Host .*; while \(\$true\) \{ Start-Sleep -Seconds \d+ \}$/.test((c['args'] as string[]).join(' ').trim()))
          throw new Error(`container ${c['name']} runs something new`);
        continue;
      }
      await run(c, (args, env) => {
        pod.agent = this.node.startAgent(image.main, args, env);
        return Promise.resolve(0);
      });
    }
    return pod;
  }
}
