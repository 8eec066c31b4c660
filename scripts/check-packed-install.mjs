#!/usr/bin/env node
// What a user gets without the repository: packs @hookrelay/shared, @hookrelay/server and
// @hookrelay/cli as they would be published (`pnpm pack`, which turns `workspace:*` into versions
// and runs the CLI's prepack), installs the three tarballs with `npm i -g` into an empty prefix
// (the npm registry supplies the rest), and checks that
//   - npm printed no engine warning (the packages and what they pull in run on this Node),
//   - the install takes at most 60 MB (printed),
//   - the CLI ships its command manifest, marked as packed,
//   - `hookrelay-server start` on a new data dir makes it from the shipped template (its log says
//     so) and answers /healthz with the package version,
//   - it serves the inspector's script and stylesheet brotli- and gzip-compressed by Accept-Encoding
//     (the build's precompressed copies ship with the package), decompressing to the plain bytes,
//   - an s3:// payload store without the AWS SDK installed is refused with the install command
//     (configuration error, exit 2), before anything is written, and so is tracing without the
//     OpenTelemetry SDK (both are optional peers, left out by an install),
//   - `hookrelay dev` starts its server and reaches its ready line,
//   - `hookrelay mcp` without the MCP SDK (an optional peer of the CLI, left out by an install) is
//     refused with the install command; installed by that command, it answers an MCP client's
//     requests on stdin (initialize, tools/list with the shared schemas' field descriptions).
// Run by .ci/run after the build; `pnpm build` must have run. Exits 1 naming what failed.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { get } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const LIMIT_BYTES = 60 * 1024 * 1024;
const PACKAGES = ['shared', 'server', 'cli'];
const work = mkdtempSync(join(tmpdir(), 'hookrelay-packed-'));
const prefix = join(work, 'prefix');
const home = join(work, 'home');
const failures = [];

function fail(message) {
  failures.push(message);
  process.stderr.write(`FAIL ${message}\n`);
}

function step(message) {
  process.stdout.write(`packed install: ${message}\n`);
}

/** Disk usage of a tree, as `du` counts it (allocated blocks, each file once). */
function diskUsage(dir) {
  let bytes = 0;
  const seen = new Set();
  const walk = (path) => {
    const stats = lstatSync(path);
    if (seen.has(stats.ino)) return;
    seen.add(stats.ino);
    bytes += stats.blocks * 512;
    if (stats.isDirectory()) for (const entry of readdirSync(path)) walk(join(path, entry));
  };
  walk(dir);
  return bytes;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** One GET with the given Accept-Encoding: the status, headers and body as sent (fetch would decompress it). */
function rawGet(url, acceptEncoding) {
  return new Promise((resolve, reject) => {
    get(url, { headers: { 'accept-encoding': acceptEncoding }, agent: false, timeout: 10_000 }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    })
      .on('timeout', function () {
        this.destroy(new Error(`GET ${url} timed out`));
      })
      .on('error', reject);
  });
}

/** The inspector's script and stylesheet, each plain and in both codings; returns what is wrong. */
async function checkCompressedAssets(base) {
  const problems = [];
  const page = await rawGet(`${base}/`, 'identity');
  const names = [...page.body.toString('utf8').matchAll(/(?:src|href)="(assets\/[^"]+\.(?:js|css))"/gu)].map((m) => m[1]);
  if (page.status !== 200 || names.length !== 2) return [`GET / answered ${page.status} naming ${names.length} assets, not 2`];
  for (const name of names) {
    const plain = await rawGet(`${base}/${name}`, 'identity');
    if (plain.status !== 200 || plain.headers['content-encoding'] !== undefined) problems.push(`${name} plain: ${plain.status} ${plain.headers['content-encoding'] ?? ''}`);
    for (const [coding, decompress] of [['br', brotliDecompressSync], ['gzip', gunzipSync]]) {
      const res = await rawGet(`${base}/${name}`, coding);
      if (res.headers['content-encoding'] !== coding || res.headers.vary !== 'accept-encoding') {
        problems.push(`${name} for Accept-Encoding ${coding}: Content-Encoding ${res.headers['content-encoding'] ?? '(none)'}, Vary ${res.headers.vary ?? '(none)'}`);
      } else if (!decompress(res.body).equals(plain.body)) problems.push(`${name} as ${coding} does not decompress to the asset`);
    }
  }
  return problems;
}

/** The environment of a user's shell: this Node first on PATH, then the prefix's programs. */
const env = {
  PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}`,
  HOME: home,
  HOOKRELAY_CONFIG_DIR: join(home, 'hookrelay'),
  NO_COLOR: '1',
};

/**
 * Runs a program until `done(output)` holds (bounded), runs `whileRunning`, then stops it with
 * SIGINT and waits for its exit. Resolves to its output and exit code.
 */
function runUntil(command, args, done, timeoutMs, whileRunning = async () => {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let reached = false;
    const stop = () => child.kill('SIGINT');
    const timer = setTimeout(stop, timeoutMs);
    const onData = (chunk) => {
      output += chunk.toString();
      if (!reached && done(output)) {
        reached = true;
        clearTimeout(timer);
        whileRunning().finally(stop);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const killer = setTimeout(() => child.kill('SIGKILL'), timeoutMs + 30_000);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(killer);
      resolve({ output, code, signal, reached });
    });
  });
}

/** Runs a program to its end: its exit code, and its stdout and stderr together. */
function runToEnd(command, args, extraEnv = {}) {
  const result = spawnSync(command, args, { cwd: work, env: { ...env, ...extraEnv }, encoding: 'utf8', timeout: 300_000 });
  return { code: result.status, text: `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? String(result.error) : ''}` };
}

try {
  // 1. Pack.
  const tarballs = PACKAGES.map((name) => {
    const out = execFileSync('pnpm', ['pack', '--pack-destination', work], { cwd: join(REPO, 'packages', name), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const tarball = out.trim().split('\n').pop().trim();
    if (!existsSync(tarball)) throw new Error(`pnpm pack of ${name} did not say where its tarball is:\n${out}`);
    return tarball;
  });
  step(`packed ${tarballs.map((t) => t.slice(work.length + 1)).join(', ')}`);

  // 2. Install into an empty prefix, with the machine's npm settings (registry, proxy, cache).
  const install = runToEnd('npm', ['install', '--global', '--prefix', prefix, '--no-fund', '--no-audit', ...tarballs], process.env);
  process.stdout.write(install.text.replace(/^(?=.)/gm, '  npm: '));
  if (install.code !== 0) throw new Error(`npm install exited ${install.code}`);
  const engineWarnings = install.text.split('\n').filter((line) => /EBADENGINE|unsupported engine/i.test(line));
  if (engineWarnings.length > 0) fail(`npm warned about engines on Node ${process.version}:\n${engineWarnings.join('\n')}`);
  else step(`no engine warning on Node ${process.version}`);

  const bytes = diskUsage(prefix);
  step(`installed size ${(bytes / 1024 / 1024).toFixed(1)} MB (limit ${LIMIT_BYTES / 1024 / 1024} MB)`);
  if (bytes > LIMIT_BYTES) fail(`the install takes ${(bytes / 1024 / 1024).toFixed(1)} MB, over ${LIMIT_BYTES / 1024 / 1024} MB`);

  const installed = join(prefix, 'lib', 'node_modules', '@hookrelay');
  const manifestFile = join(installed, 'cli', 'oclif.manifest.json');
  const manifest = existsSync(manifestFile) ? JSON.parse(readFileSync(manifestFile, 'utf8')) : undefined;
  if (manifest?.hookrelayFingerprint !== 'packed' || Object.keys(manifest.commands ?? {}).length < 10) fail('the CLI does not ship its packed oclif.manifest.json');
  const serverVersion = JSON.parse(readFileSync(join(installed, 'server', 'package.json'), 'utf8')).version;

  // 3. hookrelay-server start on a new data dir: the template, then /healthz while it runs.
  const dataDir = join(work, 'server-data');
  const port = await freePort();
  let health;
  const started = await runUntil(
    'hookrelay-server',
    ['start', '--port', String(port), '--data-dir', dataDir],
    (output) => output.includes('hookrelay-server listening on'),
    120_000,
    async () => {
      try {
        health = await (await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(10_000) })).json();
      } catch (error) {
        fail(`GET /healthz of the installed server failed: ${error.message}`);
      }
      try {
        const problems = await checkCompressedAssets(`http://127.0.0.1:${port}`);
        if (problems.length > 0) fail(`the installed server's inspector assets:\n${problems.join('\n')}`);
        else step('the inspector assets are served brotli- and gzip-compressed, decompressing to the asset');
      } catch (error) {
        fail(`GET of the installed server's inspector assets failed: ${error.message}`);
      }
    },
  );
  if (!started.reached) fail(`hookrelay-server start did not listen:\n${started.output}`);
  else {
    const opened = started.output.split('\n').find((line) => line.includes('"msg":"embedded database opened"'));
    if (!opened?.includes('"origin":"template"')) fail(`hookrelay-server start did not make its data dir from the template:\n${started.output}`);
    else step('hookrelay-server start made its new data dir from the template');
    if (started.code !== 0) fail(`hookrelay-server start exited ${started.code ?? started.signal} on SIGINT:\n${started.output}`);
  }
  if (health !== undefined) {
    if (health.data?.version !== serverVersion) fail(`/healthz says ${JSON.stringify(health.data)}, not version ${serverVersion}`);
    else step(`/healthz: version ${health.data.version}, commit ${health.data.commit}`);
  }

  // 4. An s3:// payload store without the AWS SDK.
  const s3Dir = join(work, 's3-data');
  const s3Run = runToEnd('hookrelay-server', ['start', '--port', '0', '--data-dir', s3Dir, '--payload-store', 's3://hookrelay-payloads/p']);
  if (s3Run.code !== 2 || !s3Run.text.includes('npm install -g @aws-sdk/client-s3')) fail(`an s3:// store without the AWS SDK: exit ${s3Run.code}, output:\n${s3Run.text}`);
  else if (existsSync(join(s3Dir, 'pgdata'))) fail('an s3:// store without the AWS SDK left a database behind');
  else step('an s3:// payload store without the AWS SDK is refused with the install command (exit 2)');

  // 4b. Tracing configured without the OpenTelemetry SDK.
  const otelDir = join(work, 'otel-data');
  const otelRun = runToEnd('hookrelay-server', ['start', '--port', '0', '--data-dir', otelDir], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' });
  if (otelRun.code !== 2 || !otelRun.text.includes('npm install -g @opentelemetry/')) fail(`tracing without the OpenTelemetry SDK: exit ${otelRun.code}, output:\n${otelRun.text}`);
  else if (existsSync(otelDir)) fail('tracing without the OpenTelemetry SDK left a data dir behind');
  else step('tracing without the OpenTelemetry SDK is refused with the global install command (exit 2), before anything is written');

  // 5. hookrelay dev up to its ready line.
  const devPort = await freePort();
  const dev = await runUntil(
    'hookrelay',
    ['dev', '--json', '--port', String(devPort), '--data-dir', join(work, 'dev-data'), '--forward-to', String(await freePort())],
    (output) => output.includes('"type":"ready"'),
    120_000,
  );
  const serverLog = existsSync(join(work, 'dev-data', 'server.log')) ? readFileSync(join(work, 'dev-data', 'server.log'), 'utf8') : '';
  if (!dev.reached || !serverLog.includes('hookrelay-server listening on')) fail(`hookrelay dev did not reach its ready line:\n${dev.output}\nserver.log:\n${serverLog}`);
  else if (dev.code !== 0) fail(`hookrelay dev exited ${dev.code ?? dev.signal} on SIGINT:\n${dev.output}`);
  else step('hookrelay dev started its server and printed its ready line');

  // 6. hookrelay mcp: refused without the SDK, then served once the printed command installed it.
  const mcpEnv = { HOOKRELAY_API_URL: 'http://127.0.0.1:9', HOOKRELAY_API_KEY: 'hr_packed_check' };
  const noSdk = runToEnd('hookrelay', ['mcp'], mcpEnv);
  const sdkInstall = /npm install -g (@modelcontextprotocol\/sdk@\S+)/u.exec(noSdk.text);
  if (noSdk.code !== 1 || !noSdk.text.includes('CONFIG_ERROR') || sdkInstall === null) fail(`hookrelay mcp without the MCP SDK: exit ${noSdk.code}, output:\n${noSdk.text}`);
  else {
    step('hookrelay mcp without the MCP SDK is refused with the install command (exit 1)');
    const added = runToEnd('npm', ['install', '--global', '--prefix', prefix, '--no-fund', '--no-audit', sdkInstall[1]], process.env);
    if (added.code !== 0) fail(`npm install of ${sdkInstall[1]} exited ${added.code}:\n${added.text}`);
    else {
      const requests = [
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'packed-check', version: '1' } } },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      ];
      const served = spawnSync('hookrelay', ['mcp'], { cwd: work, env: { ...env, ...mcpEnv }, input: requests.map((r) => `${JSON.stringify(r)}\n`).join(''), encoding: 'utf8', timeout: 60_000 });
      let answers = [];
      try {
        answers = served.stdout.trim().split('\n').map((line) => JSON.parse(line));
      } catch {
        // Judged below, with the output.
      }
      const tools = answers.find((answer) => answer.id === 2)?.result?.tools ?? [];
      const described = tools.find((tool) => tool.name === 'get_message')?.inputSchema?.properties?.message_id?.description;
      if (served.status !== 0 || answers[0]?.result?.serverInfo?.name !== 'hookrelay' || tools.length !== 10 || typeof described !== 'string') {
        fail(`hookrelay mcp with the SDK installed: exit ${served.status}, ${tools.length} tools, stdout:\n${served.stdout}\nstderr:\n${served.stderr}`);
      } else step(`with ${sdkInstall[1]} installed, hookrelay mcp answered initialize and listed its ${tools.length} tools, fields described`);
    }
  }
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (failures.length > 0) {
  process.stderr.write(`packed install: ${failures.length} check(s) failed\n`);
  process.exit(1);
}
step('all checks passed');
