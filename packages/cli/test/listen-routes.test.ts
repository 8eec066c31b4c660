import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CliFailure } from '../src/errors.js';
import { ExitCode } from '../src/exit-codes.js';
import { forwardingSettings, type ForwardingFlagValues } from '../src/flags/forwarding.js';
import { parseProjectFile } from '../src/listen/project-file.js';
import { chooseRoute, isLoopbackHost, parseRoute } from '../src/listen/routes.js';

function flags(extra: Partial<ForwardingFlagValues>): ForwardingFlagValues {
  return {
    insecure: false,
    transport: 'auto',
    'preserve-host': false,
    timeout: '30s',
    'heartbeat-timeout': '45s',
    'capture-response-bytes': 65_536,
    verbose: false,
    ...extra,
  };
}

function usageError(run: () => unknown): CliFailure {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CliFailure);
    expect((error as CliFailure).exitCode).toBe(ExitCode.USAGE);
    return error as CliFailure;
  }
  throw new Error('expected a usage error');
}

describe('--forward-to routes', () => {
  it('reads a plain target, a path prefix and an event glob', () => {
    expect(parseRoute('3000')).toMatchObject({ pathPrefix: null, eventGlob: null, display: 'http://localhost:3000' });
    expect(parseRoute('/stripe/=4000')).toMatchObject({ pathPrefix: '/stripe', display: '/stripe → http://localhost:4000' });
    expect(parseRoute('event:push=3000/gh')).toMatchObject({ eventGlob: 'push', display: 'event:push → http://localhost:3000/gh' });
    // A URL whose query holds `=` is a plain target.
    expect(parseRoute('http://127.0.0.1:3000/hooks?a=b')).toMatchObject({ pathPrefix: null, eventGlob: null });
  });

  it('refuses a condition without a target', () => {
    expect(() => parseRoute('/stripe')).toThrow(/no target/);
    expect(() => parseRoute('event:push=')).toThrow(/no target/);
    expect(() => parseRoute('event:=3000')).toThrow(/needs a glob/);
  });

  it('the first route that matches wins; a prefix matches whole segments and is removed', () => {
    const routes = [parseRoute('/stripe=4000'), parseRoute('event:push=3000/gh'), parseRoute('event:checkout.*=5000')];
    expect(chooseRoute(routes, { path: '/stripe/events', event_type: 'push' })).toMatchObject({ route: routes[0], path: '/events' });
    expect(chooseRoute(routes, { path: '/stripe', event_type: null })).toMatchObject({ route: routes[0], path: '/' });
    expect(chooseRoute(routes, { path: '/stripes', event_type: 'push' })).toMatchObject({ route: routes[1], path: '/stripes' });
    expect(chooseRoute(routes, { path: '/', event_type: 'checkout.session.completed' })).toMatchObject({ route: routes[2] });
    expect(chooseRoute(routes, { path: '/', event_type: 'issues' })).toBeNull();
    // Globs are whole-string and case-sensitive, as the server's --events filter reads them.
    expect(chooseRoute(routes, { path: '/', event_type: 'checkout' })).toBeNull();
    expect(chooseRoute(routes, { path: '/', event_type: 'Push' })).toBeNull();
    expect(chooseRoute(routes, { path: '/', event_type: 'pushed' })).toBeNull();
    expect(chooseRoute(routes, { path: '/' })).toBeNull();
  });

  it('reads a provider in front of any route, and refuses what is no provider', () => {
    expect(parseRoute('stripe=4000')).toMatchObject({ provider: 'stripe', pathPrefix: null, eventGlob: null, display: 'stripe → http://localhost:4000' });
    expect(parseRoute('github=event:push=3000/gh')).toMatchObject({ provider: 'github', eventGlob: 'push', display: 'github event:push → http://localhost:3000/gh' });
    expect(parseRoute(' shopify=/orders=5000')).toMatchObject({ provider: 'shopify', pathPrefix: '/orders', display: 'shopify /orders → http://localhost:5000' });
    expect(parseRoute('3000')).toMatchObject({ provider: null });
    expect(() => parseRoute('gitlab=3000')).toThrow('"gitlab" is not a provider: a route\'s provider is one of github, stripe, slack, shopify, standard_webhooks');
    expect(() => parseRoute('GitHub=3000')).toThrow(/"GitHub" is not a provider/u);
    expect(() => parseRoute('stripe=')).toThrow(/no target after =/u);
    expect(() => parseRoute('stripe=github=3000')).toThrow(/names two providers/u);
    // A target's query may still hold = (no target starts with a word and =).
    expect(parseRoute('stripe=http://127.0.0.1:4000/hooks?a=b')).toMatchObject({ provider: 'stripe', target: { baseQuery: 'a=b' } });
  });

  it("a provider's route takes the webhooks whose headers name that provider", () => {
    const routes = [parseRoute('stripe=4000'), parseRoute('github=event:push=3000/gh'), parseRoute('5000')];
    const stripe = { path: '/', event_type: 'invoice.paid', raw_headers: [['Stripe-Signature', 't=1,v1=00']] as [string, string][] };
    expect(chooseRoute(routes, stripe)).toMatchObject({ route: routes[0] });
    expect(chooseRoute(routes, { path: '/', event_type: 'push', raw_headers: [['X-GitHub-Event', 'push']] })).toMatchObject({ route: routes[1] });
    expect(chooseRoute(routes, { path: '/', event_type: 'issues', raw_headers: [['X-GitHub-Event', 'issues']] })).toMatchObject({ route: routes[2] });
    expect(chooseRoute(routes, { path: '/', event_type: 'push' })).toMatchObject({ route: routes[2] });
    expect(chooseRoute(routes.slice(0, 2), { path: '/', event_type: 'push', raw_headers: [['content-type', 'application/json']] })).toBeNull();
  });

  it('knows loopback hosts', () => {
    for (const host of ['localhost', 'app.localhost', '127.0.0.1', '127.1.2.3', '[::1]', '::1']) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['example.com', '10.0.0.1', '[::2]', 'localhost.example.com', '128.0.0.1']) expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('hookrelay.json', () => {
  it('reads routes in order', () => {
    const file = parseProjectFile(
      '/app/hookrelay.json',
      JSON.stringify({ routes: [{ path: '/stripe', forward_to: '4000' }, { event: 'push', forward_to: '3000/gh' }, { path: '/x', event: 'a.*', forward_to: '5000' }, { forward_to: '3000' }] }),
    );
    expect(file.routes.map((route) => route.display)).toEqual([
      '/stripe → http://localhost:4000',
      'event:push → http://localhost:3000/gh',
      '/x event:a.* → http://localhost:5000',
      'http://localhost:3000',
    ]);
    expect(chooseRoute(file.routes, { path: '/x/y', event_type: 'b' })?.route.display).toBe('http://localhost:3000');
    expect(chooseRoute(file.routes, { path: '/x/y', event_type: 'a.b' })?.route.display).toBe('/x event:a.* → http://localhost:5000');
  });

  it.each([
    ['{', /not valid JSON/],
    ['[]', /must be a JSON object/],
    ['{"routes":[]}', /routes: must be a non-empty array/],
    ['{"routes":[{"forward_to":"3000"}],"extra":1}', /extra: unknown field/],
    ['{"routes":[{"path":"/a"}]}', /routes\.0\.forward_to: must be/],
    ['{"routes":[{"forward_to":"3000","evnt":"push"}]}', /routes\.0\.evnt: unknown field/],
    ['{"routes":[{"path":"a","forward_to":"3000"}]}', /routes\.0: the path prefix "a" must start with \//],
    ['{"routes":[{"forward_to":"ftp://x"}]}', /routes\.0: .*not a port/],
  ])('refuses %s', (text, message) => {
    expect(() => parseProjectFile('hookrelay.json', text)).toThrow(message);
  });
});

describe('forwardingSettings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-routes-'));
  const empty = mkdtempSync(join(tmpdir(), 'hookrelay-routes-empty-'));
  writeFileSync(join(dir, 'hookrelay.json'), JSON.stringify({ routes: [{ path: '/gh', forward_to: '3000' }] }));
  writeFileSync(join(dir, 'other.json'), JSON.stringify({ routes: [{ forward_to: 'https://127.0.0.1:8443' }] }));
  writeFileSync(join(dir, 'ca.pem'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');

  it('--forward-to wins; else ./hookrelay.json; else --config', () => {
    expect(forwardingSettings(flags({ 'forward-to': ['4000', '/a=5000'] }), dir).routes.map((r) => r.display)).toEqual([
      'http://localhost:4000',
      '/a → http://localhost:5000',
    ]);
    const fromFile = forwardingSettings(flags({}), dir);
    expect(fromFile.routes.map((r) => r.display)).toEqual(['/gh → http://localhost:3000']);
    expect(fromFile.routesFrom).toBe(join(dir, 'hookrelay.json'));
    expect(forwardingSettings(flags({ config: 'other.json' }), dir).routes[0]!.display).toBe('https://127.0.0.1:8443');
  });

  it('needs routes from somewhere, and not from both', () => {
    expect(usageError(() => forwardingSettings(flags({}), empty)).message).toMatch(/no --forward-to and no hookrelay.json/);
    expect(usageError(() => forwardingSettings(flags({ config: 'missing.json' }), dir)).message).toMatch(/cannot read .*missing.json/);
    expect(usageError(() => forwardingSettings(flags({ config: 'other.json', 'forward-to': ['3000'] }), dir)).message).toMatch(/cannot be used together/);
  });

  it('--events and --path become the server filter', () => {
    expect(forwardingSettings(flags({ 'forward-to': ['3000'] }), dir).filter).toEqual({});
    expect(forwardingSettings(flags({ 'forward-to': ['3000'], events: ' push, checkout.* ,', path: '/github/*' }), dir).filter).toEqual({
      events: 'push,checkout.*',
      path: '/github/*',
    });
    expect(usageError(() => forwardingSettings(flags({ 'forward-to': ['3000'], events: ' , ' }), dir)).message).toMatch(/--events needs at least one/);
    expect(usageError(() => forwardingSettings(flags({ 'forward-to': ['3000'], path: '' }), dir)).message).toMatch(/--path needs a glob/);
  });

  it('--timeout 0 means no limit', () => {
    expect(forwardingSettings(flags({ 'forward-to': ['3000'], timeout: '0' }), dir).timeoutMs).toBe(0);
  });

  it('--insecure only for loopback targets', () => {
    expect(forwardingSettings(flags({ 'forward-to': ['https://localhost:8443', '/a=https://127.0.0.1:9443'], insecure: true }), dir).tls.insecure).toBe(true);
    const error = usageError(() => forwardingSettings(flags({ 'forward-to': ['3000', '/a=https://app.example.com'], insecure: true }), dir));
    expect(error.message).toMatch(/--insecure is only accepted for loopback targets, not https:\/\/app.example.com/);
  });

  it('--ca-file must hold a PEM certificate', () => {
    expect(forwardingSettings(flags({ 'forward-to': ['3000'], 'ca-file': 'ca.pem' }), dir).tls.ca?.toString()).toContain('BEGIN CERTIFICATE');
    expect(usageError(() => forwardingSettings(flags({ 'forward-to': ['3000'], 'ca-file': 'other.json' }), dir)).message).toMatch(/holds no PEM/);
    expect(usageError(() => forwardingSettings(flags({ 'forward-to': ['3000'], 'ca-file': 'nope.pem' }), dir)).message).toMatch(/cannot read/);
  });
});
