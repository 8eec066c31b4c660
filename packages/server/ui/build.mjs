// Builds the inspector page and the customer portal into ../dist/ui: for each, one hashed script and
// stylesheet under assets/, each beside its brotli (.br) and gzip (.gz) copy, and its page
// (index.html, portal.html) naming them. The two pages share their components and hooks through
// their sources (src/), each bundled whole: a page loads one script. The server serves that
// directory (src/routes/inspector.ts), a copy to a browser that accepts its coding: compressed once
// here at the highest levels rather than at each request.
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

/** Each page: its entry, its HTML template and the budget of its JavaScript, gzipped. */
const PAGES = [
  { name: 'inspector', entry: 'main.tsx', template: 'index.html', maxJsGzipBytes: 150 * 1024 },
  { name: 'portal', entry: 'portal.tsx', template: 'portal.html', maxJsGzipBytes: 60 * 1024 },
];

const here = dirname(fileURLToPath(import.meta.url));
const outdir = join(here, '..', 'dist', 'ui');
await rm(outdir, { recursive: true, force: true });
await mkdir(join(outdir, 'assets'), { recursive: true });

const result = await build({
  entryPoints: PAGES.map((page) => join(here, 'src', page.entry)),
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
const lines = [];
for (const page of PAGES) {
  const script = outputs.find((file) => file.endsWith('.js') && result.metafile.outputs[file].entryPoint?.endsWith(`src/${page.entry}`));
  const style = script && result.metafile.outputs[script].cssBundle;
  if (!script || !style) throw new Error(`esbuild produced no script or stylesheet for the ${page.name}: ${outputs.join(', ')}`);
  const gzipped = gzipSync(await readFile(script)).length;
  if (gzipped > page.maxJsGzipBytes) throw new Error(`the ${page.name}'s JavaScript is ${gzipped} bytes gzipped, over the ${page.maxJsGzipBytes} budget`);
  const template = await readFile(join(here, page.template), 'utf8');
  // Relative, like the page's API calls: the server may be published under a path prefix.
  const html = template.replace('%SCRIPT%', `assets/${basename(script)}`).replace('%STYLE%', `assets/${basename(style)}`);
  await writeFile(join(outdir, page.template), html);
  lines.push(`${page.name}: ${basename(script)} (${(gzipped / 1024).toFixed(1)} KiB gzipped), ${basename(style)}`);
}

for (const file of outputs) {
  const bytes = await readFile(file);
  await writeFile(`${file}.gz`, gzipSync(bytes, { level: 9 }));
  const brotli = { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length };
  await writeFile(`${file}.br`, brotliCompressSync(bytes, { params: brotli }));
}
console.log(lines.join('\n'));
