// `flanneld netconf set-vni --port`: a VXLAN port other than 4789 is set (HNS 10.3 takes it as a VxlanPort
// network policy, src/backends/vxlan/backend.ts), with a note naming what every node then needs; a value
// that is no UDP port is a flag error (FLANNEL_ERR_FLAG) and nothing is written.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { command } from '../../../src/commands/netconf.js';

let dir = '';
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function setVni(args: string[]) {
  dir = mkdtempSync(join(tmpdir(), 'netconf-'));
  const file = join(dir, 'net-conf.json');
  writeFileSync(file, '{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}\n');
  const out: string[] = [];
  const err: string[] = [];
  const code = await command.run(['set-vni', '-f', file, '-o', file, ...args], { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: {}, platform: 'linux' });
  return { code, stderr: err.join(''), netConf: JSON.parse(readFileSync(file, 'utf8')) as { Backend: Record<string, unknown> } };
}

describe('flanneld netconf set-vni --port', () => {
  it('sets a port other than 4789 and says what every node then needs (HNS 10.3, inbound UDP)', async () => {
    const r = await setVni(['--port', '8472']);
    expect(r.code).toBe(0);
    expect(r.netConf.Backend).toMatchObject({ VNI: 4096, Port: 8472 });
    expect(r.stderr).toContain('HNS 10.3');
    expect(r.stderr).toContain('inbound UDP 8472');
  });

  it('4789 by default, with no note', async () => {
    const r = await setVni([]);
    expect(r.netConf.Backend).toMatchObject({ Port: 4789 });
    expect(r.stderr).not.toContain('HNS 10.3');
  });

  it.each(['0', '65536'])('--port %s is no UDP port: a flag error, nothing written', async (port) => {
    const r = await setVni(['--port', port]);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('invalid value "' + port + '" for flag -port');
    expect(r.netConf.Backend).toEqual({ Type: 'vxlan' });
  });
});
