// Bundles the server process (dist/main.js and everything it imports, but PGlite and the AWS SDK)
// into one CommonJS script, dist/bin/hookrelay-server.cjs, run by dist/bin/hookrelay-server.js (the
// package's `hookrelay-server` program, from src/launch.ts) with a V8 code cache
// (src/code-cache.ts). One file instead of hundreds of modules: Node resolves, reads and compiles
// them one by one at each start, on the thread that also opens the database (BENCHMARKS.md,
// Embedded start-up and memory). A script rather than an ES module: Node 20 has a code cache for
// scripts only.
//
// PGlite stays outside: it loads its WebAssembly and data files next to its own module. The AWS SDK is
// loaded only with an s3:// payload store. The bundle sits two directories below the package, as
// dist/db/*.js does, so that the paths the modules resolve from their own location (migrations/,
// dist/, dist/ui/, package.json) hold in it too.
import { chmod } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const binDir = join(packageDir, 'dist', 'bin');
const common = { bundle: true, platform: 'node', target: 'node20', legalComments: 'none', minifyWhitespace: true, minifySyntax: true, logLevel: 'warning' };

await build({
  ...common,
  entryPoints: [join(packageDir, 'dist', 'main.js')],
  outfile: join(binDir, 'hookrelay-server.cjs'),
  format: 'cjs',
  external: ['@electric-sql/pglite', '@electric-sql/pglite/*', '@aws-sdk/*'],
  // import() in a vm.Script needs an experimental loader option and fails in code from a cache:
  // the AWS SDK's lazy import() becomes a require() (the SDK ships CommonJS).
  supported: { 'dynamic-import': false },
  // The modules find their files from their own URL: in a script, the script's.
  define: { 'import.meta.url': '__hookrelayBundleUrl' },
  banner: { js: "const __hookrelayBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
});

const launcher = join(binDir, 'hookrelay-server.js');
await build({ ...common, entryPoints: [join(packageDir, 'dist', 'launch.js')], outfile: launcher, format: 'esm' });
await chmod(launcher, 0o755);
