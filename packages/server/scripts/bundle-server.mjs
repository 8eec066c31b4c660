// Bundles the server process (dist/main.js and everything it imports, but PGlite and the AWS SDK)
// into one file, dist/bin/hookrelay-server.js, the package's `hookrelay-server` program. One file
// instead of 859 modules: Node resolves, reads and compiles them one by one at each start, and that
// took ~0.3 s of a reopened embedded start of ~1.5 s, on the thread that also opens the database.
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
const outfile = join(packageDir, 'dist', 'bin', 'hookrelay-server.js');

await build({
  entryPoints: [join(packageDir, 'dist', 'main.js')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['@electric-sql/pglite', '@electric-sql/pglite/*', '@aws-sdk/*'],
  // CommonJS dependencies call require() for Node's modules; an ES module has none of its own.
  banner: { js: "import { createRequire as __hookrelayCreateRequire } from 'node:module';\nconst require = __hookrelayCreateRequire(import.meta.url);" },
  legalComments: 'none',
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});
await chmod(outfile, 0o755);
