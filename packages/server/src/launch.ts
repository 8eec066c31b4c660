#!/usr/bin/env node
// The `hookrelay-server` program (dist/bin/hookrelay-server.js): runs the bundled server
// (dist/bin/hookrelay-server.cjs, made from main.ts by scripts/bundle-server.mjs) with a V8 code
// cache. Only Node's own modules here: everything else is in the bundle.
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { codeCacheDir, LAUNCH_V8_FLAGS, runScriptWithCodeCache } from './code-cache.js';
import { processEnvironment } from './environment.js';

const env = processEnvironment();
for (const flag of LAUNCH_V8_FLAGS) v8.setFlagsFromString(flag);
runScriptWithCodeCache({
  scriptFile: fileURLToPath(new URL('./hookrelay-server.cjs', import.meta.url)),
  cacheDir: codeCacheDir(env),
  // Flags given to node (node --cpu-prof, NODE_OPTIONS) change what V8 accepts: each set has its cache.
  flagsKey: `${process.execArgv.join(' ')}\0${env.NODE_OPTIONS ?? ''}`,
});
