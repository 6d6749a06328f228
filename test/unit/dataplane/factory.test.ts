// createDataplane (src/dataplane/factory.ts): `--dataplane windows` anywhere but Windows says that it
// needs Windows and names `--dataplane simulated`, before any DLL is looked for (before, it failed on
// `cannot load iphlpapi.dll ... check --win32-dll-dir`, a flag that cannot help on Linux).
import { describe, expect, it } from '@jest/globals';
import { systemClock } from '../../../src/basics/clock.js';
import type { AgentConfig } from '../../../src/config/agent-config.js';
import { createDataplane } from '../../../src/dataplane/factory.js';
import { UnsupportedError } from '../../../src/basics/errors.js';
import { silentLogger } from '../../../src/basics/log.js';
import { Metrics } from '../../../src/basics/metrics.js';
import { expectCode } from '../../support/errors.js';

describe('createDataplane', () => {
  it.each<NodeJS.Platform>(['linux', 'darwin'])('--dataplane windows on %s: FLANNEL_ERR_UNSUPPORTED naming Windows and --dataplane simulated', async (platform) => {
    const config = { dataplane: 'windows', win32DllDir: '' } as unknown as AgentConfig;
    const err = await expectCode(
      createDataplane(config, { log: silentLogger(), metrics: new Metrics(), clock: systemClock, platform }),
      UnsupportedError,
      'FLANNEL_ERR_UNSUPPORTED',
    );
    expect(err.message).toContain('needs Windows');
    expect(err.message).toContain('--dataplane simulated');
    expect(err.message).not.toContain('--win32-dll-dir');
    expect(err.context).toMatchObject({ dataplane: 'windows', platform });
  });
});
