// Builds the inspector page into ../dist/ui: one hashed script and stylesheet under assets/, each
// beside its brotli (.br) and gzip (.gz) copy, and index.html naming them. The server serves that
// directory (src/routes/inspector.ts), a copy to a browser that accepts its coding: compressed once
// here at the highest levels rather than at each request.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/** The budget for the page's JavaScript, gzipped. */
const MAX_JS_GZIP_BYTES = 150 * 1024;

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, '..', 'dist', 'ui');
await rm(outdir, { recursive: true, force: true });
await mkdir(join(outdir, 'assets'), { recursive: true });

const result = await build({
  entryPoints: [join(here, 'src', 'main.tsx')],
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir: join(outdir, 'assets'),
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs);
const script = outputs.find((file) => file.endsWith('.js'));
const style = outputs.find((file) => file.endsWith('.css'));
if (!script || !style) throw new Error(`esbuild produced no script or stylesheet: ${outputs.join(', ')}`);
const gzipped = gzipSync(await readFile(script)).length;
if (gzipped > MAX_JS_GZIP_BYTES) throw new Error(`the inspector's JavaScript is ${gzipped} bytes gzipped, over the ${MAX_JS_GZIP_BYTES} budget`);

for (const file of outputs) {
  const bytes = await readFile(file);
  await writeFile(`${file}.gz`, gzipSync(bytes, { level: 9 }));
  const brotli = { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length };
  await writeFile(`${file}.br`, brotliCompressSync(bytes, { params: brotli }));
}

const template = await readFile(join(here, 'index.html'), 'utf8');
// Relative, like the page's API calls: the server may be published under a path prefix.
const html = template.replace('%SCRIPT%', `assets/${basename(script)}`).replace('%STYLE%', `assets/${basename(style)}`);
await writeFile(join(outdir, 'index.html'), html);
console.log(`inspector: ${basename(script)} (${(gzipped / 1024).toFixed(1)} KiB gzipped), ${basename(style)}`);
