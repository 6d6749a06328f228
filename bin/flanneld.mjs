#!/usr/bin/env -S node --
// The `flanneld` command npm installs. Node 20 reads `--env-file` even when it comes after the script
// (nodejs/node#54232: `node main.js --env-file=x` fails with "node: x: not found" before any of our code
// runs); arguments after `--` are left alone (nodejs/node#54237), so this shim starts Node with `--`
// before itself and flanneld's own --env-file reaches flanneld. npm's Windows shims (cmd-shim) honour
// the `env -S` arguments the same way.
import '../dist/main.js';
