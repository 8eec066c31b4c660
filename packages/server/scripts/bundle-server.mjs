// Bundles the server process (dist/main.js and everything it imports) into one CommonJS script,
// dist/bin/hookrelay-server.cjs, run by dist/bin/hookrelay-server.js (the package's
// `hookrelay-server` program, from src/launch.ts) with a V8 code cache (src/code-cache.ts). One file
// instead of hundreds of modules: Node resolves, reads and compiles them one by one at each start, on
// the thread that also opens the database (BENCHMARKS.md, Embedded start-up and memory). A script
// rather than an ES module: Node 20 has a code cache for scripts only.
//
// What the bundle holds is not installed again: the package's runtime `dependencies` and
// `peerDependencies` are exactly what stays outside it, read here from its package.json. PGlite
// (a dependency, pinned to the version that made the template) loads its WebAssembly and data files
// next to its own module. An optional peer such as the AWS SDK is loaded only when configured (an
// s3:// payload store) and installed by the operator who needs it; so is the OpenTelemetry SDK, loaded
// only when tracing is configured (src/tracing/tracing.ts): outside the bundle, a server without it
// neither reads nor compiles it, and an install without tracing does not carry it. @opentelemetry/api
// stays in (a devDependency, not a peer): prom-client uses it at every start; the SDK brings its own
// copy, which shares the API's context keys and global registry with the bundled one. Everything else (Fastify, the PostgreSQL client with
// its patch, zod, …) is a devDependency that the bundle carries.
//
// The bundle sits two directories below the package, as dist/db/*.js does, so that the paths the
// modules resolve from their own location (migrations/, dist/, dist/ui/, package.json) hold in it too.
import { readFileSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const binDir = join(packageDir, 'dist', 'bin');
const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
const outside = [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})];
const common = { bundle: true, platform: 'node', target: 'node20', legalComments: 'none', minifyWhitespace: true, minifySyntax: true, logLevel: 'warning' };

await build({
  ...common,
  entryPoints: [join(packageDir, 'dist', 'main.js')],
  outfile: join(binDir, 'hookrelay-server.cjs'),
  format: 'cjs',
  external: outside.flatMap((name) => [name, `${name}/*`]),
  // import() in a vm.Script needs an experimental loader option and fails in code from a cache:
  // the lazy import()s of the AWS SDK and of OpenTelemetry become require()s (both ship CommonJS).
  supported: { 'dynamic-import': false },
  // The modules find their files from their own URL: in a script, the script's.
  define: { 'import.meta.url': '__hookrelayBundleUrl' },
  banner: { js: "const __hookrelayBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
});

const launcher = join(binDir, 'hookrelay-server.js');
await build({ ...common, entryPoints: [join(packageDir, 'dist', 'launch.js')], outfile: launcher, format: 'esm' });
await chmod(launcher, 0o755);
