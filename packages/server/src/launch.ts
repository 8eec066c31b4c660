#!/usr/bin/env node
// The `hookrelay-server` program (dist/bin/hookrelay-server.js): runs the bundled server
// (dist/bin/hookrelay-server.cjs, made from main.ts by scripts/bundle-server.mjs) with a V8 code
// cache. Only Node's own modules here: everything else is in the bundle.
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { codeCacheDir, LAUNCH_V8_FLAGS, runScriptWithCodeCache } from './code-cache.js';

for (const flag of LAUNCH_V8_FLAGS) v8.setFlagsFromString(flag);
runScriptWithCodeCache({
  scriptFile: fileURLToPath(new URL('./hookrelay-server.cjs', import.meta.url)),
  cacheDir: codeCacheDir(),
  // Flags given to node (node --cpu-prof) change what V8 accepts: each set has its cache. A V8 flag
  // in NODE_OPTIONS only makes V8 reject the cache, which the start then writes anew.
  flagsKey: process.execArgv.join(' '),
});
