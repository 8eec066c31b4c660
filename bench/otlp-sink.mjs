#!/usr/bin/env node
// A local OTLP/HTTP trace sink for `--otel` runs of the benchmarks: answers every export 200 and keeps
// nothing but counts, so that a server with tracing on pays the SDK's work and an export's round trip,
// not a collector's. Runs as a process of its own, so that its CPU is not counted as the load client's.
// Prints `otlp-sink listening on http://127.0.0.1:PORT`; on SIGTERM, one JSON line of what it received
// ({ exports, bytes }), then exits.
import http from 'node:http';

let exports = 0;
let bytes = 0;
const server = http.createServer((req, res) => {
  req.on('data', (chunk) => (bytes += chunk.length));
  req.on('end', () => {
    exports += 1;
    const json = String(req.headers['content-type'] ?? '').startsWith('application/json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' });
    res.end(json ? '{}' : '');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`otlp-sink listening on http://127.0.0.1:${server.address().port}\n`);
});
process.once('SIGTERM', () => {
  process.stdout.write(`${JSON.stringify({ exports, bytes })}\n`);
  server.close();
  server.closeAllConnections();
  process.exit(0);
});
