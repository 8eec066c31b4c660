import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CliFailure } from '../src/errors.js';
import { ExitCode } from '../src/exit-codes.js';
import { forwardingSettings } from '../src/flags/forwarding.js';
import { parseProjectFile, readProjectFile } from '../src/listen/project-file.js';
import { chooseRoute, isLoopbackHost, makeRoute, parseRoute } from '../src/listen/routes.js';

const FILE = '/app/hookrelay.json';
const parse = (value: unknown) => parseProjectFile(FILE, typeof value === 'string' ? value : JSON.stringify(value));

describe('hookrelay.json validation', () => {
  it('names the file, the field and what it must be', () => {
    const cases: [unknown, string][] = [
      ['[]', `${FILE}: must be a JSON object with "routes"`],
      ['null', `${FILE}: must be a JSON object with "routes"`],
      ['"routes"', `${FILE}: must be a JSON object with "routes"`],
      [{}, `${FILE}: routes: must be a non-empty array of { "provider"?, "path"?, "event"?, "forward_to" }`],
      [{ routes: { forward_to: '3000' } }, `${FILE}: routes: must be a non-empty array of { "provider"?, "path"?, "event"?, "forward_to" }`],
      [{ routes: [{ forward_to: '3000' }], extra: 1 }, `${FILE}: extra: unknown field (expected "verify", "routes")`],
      [{ routes: [null] }, `${FILE}: routes.0: must be an object`],
      [{ routes: [{ forward_to: '3000' }, ['3000']] }, `${FILE}: routes.1: must be an object`],
      [{ routes: ['3000'] }, `${FILE}: routes.0: must be an object`],
      [{ routes: [{ forward_to: '' }] }, `${FILE}: routes.0.forward_to: must be a port, host:port/path or an http(s) URL`],
      [{ routes: [{ forward_to: 3000 }] }, `${FILE}: routes.0.forward_to: must be a port, host:port/path or an http(s) URL`],
      [{ routes: [{ forward_to: '3000', path: 5 }] }, `${FILE}: routes.0.path: must be a string such as "/stripe"`],
      [{ routes: [{ forward_to: '3000', event: '' }] }, `${FILE}: routes.0.event: must be a glob such as "checkout.*"`],
      [{ routes: [{ forward_to: '3000', event: 5 }] }, `${FILE}: routes.0.event: must be a glob such as "checkout.*"`],
      [{ routes: [{ forward_to: '3000', evnt: 'push' }] }, `${FILE}: routes.0.evnt: unknown field (expected provider, path, event, forward_to)`],
      [{ routes: [{ forward_to: '3000', provider: 'gitlab' }] }, `${FILE}: routes.0.provider: must be one of github, stripe, slack, shopify, standard_webhooks`],
      [{ routes: [{ forward_to: '3000', provider: 5 }] }, `${FILE}: routes.0.provider: must be one of github, stripe, slack, shopify, standard_webhooks`],
      [{ routes: [{ forward_to: '3000' }], verify: [] }, `${FILE}: verify: must be an object of provider names (github, stripe, slack, shopify, standard_webhooks) to secrets`],
      [{ routes: [{ forward_to: '3000' }], verify: {} }, `${FILE}: verify: must be an object of provider names (github, stripe, slack, shopify, standard_webhooks) to secrets`],
      [{ routes: [{ forward_to: '3000' }], verify: { gitlab: 's' } }, `${FILE}: verify.gitlab: unknown provider (expected github, stripe, slack, shopify, standard_webhooks)`],
      // JSON.parse makes __proto__ an own field, as a file holding it would.
      ['{"routes":[{"forward_to":"3000"}],"verify":{"__proto__":"s"}}', `${FILE}: verify.__proto__: unknown provider (expected github, stripe, slack, shopify, standard_webhooks)`],
      [{ routes: [{ forward_to: '3000' }], verify: { github: '' } }, `${FILE}: verify.github: must be the secret, or env:NAME to read it from the environment variable NAME`],
      [{ routes: [{ forward_to: '3000' }], verify: { github: 5 } }, `${FILE}: verify.github: must be the secret, or env:NAME to read it from the environment variable NAME`],
      [{ routes: [{ forward_to: '3000', path: 'a' }] }, `${FILE}: routes.0: the path prefix "a" must start with /`],
    ];
    for (const [value, message] of cases) expect(() => parse(value), JSON.stringify(value)).toThrow(new Error(message));
    expect(() => parse('{')).toThrow(/^\/app\/hookrelay\.json: not valid JSON \(.+\)$/u);
  });

  it('takes the providers to verify in their order, and a route for one provider', () => {
    const file = parse({ verify: { stripe: 'env:STRIPE_SECRET', github: 'gh-secret' }, routes: [{ provider: 'stripe', forward_to: '4000' }, { forward_to: '3000' }] });
    expect(file.verify).toEqual([
      { provider: 'stripe', secret: 'env:STRIPE_SECRET' },
      { provider: 'github', secret: 'gh-secret' },
    ]);
    expect(file.routes.map((route) => [route.provider, route.display])).toEqual([
      ['stripe', 'stripe → http://localhost:4000'],
      [null, 'http://localhost:3000'],
    ]);
    expect(parse({ routes: [{ forward_to: '3000' }] }).verify).toEqual([]);
  });

  it('takes a $schema field, a route with a path only, and a path and an event together', () => {
    const file = parse({ $schema: './hookrelay.schema.json', routes: [{ path: '/a', forward_to: '3000' }, { path: '/b', event: 'x.*', forward_to: '4000' }] });
    expect(file).toMatchObject({ file: FILE });
    expect(file.routes.map((route) => [route.pathPrefix, route.eventGlob])).toEqual([
      ['/a', null],
      ['/b', 'x.*'],
    ]);
  });
});

describe('reading hookrelay.json', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookrelay-project-file-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is an error naming the file when hookrelay.json exists but cannot be read, not a project without routes', () => {
    const unreadable = join(dir, 'unreadable');
    mkdirSync(join(unreadable, 'hookrelay.json'), { recursive: true });
    expect(() => readProjectFile(undefined, unreadable)).toThrow(new RegExp(`^cannot read ${join(unreadable, 'hookrelay.json')} \\(EISDIR`, 'u'));
    let failure: unknown;
    try {
      forwardingSettings({ insecure: false, transport: 'auto', 'preserve-host': false, timeout: '30s', 'heartbeat-timeout': '45s', 'capture-response-bytes': 65_536, verbose: false }, unreadable);
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(CliFailure);
    expect((failure as CliFailure).exitCode).toBe(ExitCode.USAGE);
    expect((failure as CliFailure).message).toMatch(/^cannot read .*hookrelay\.json \(EISDIR/u);
  });

  it('is no project file when there is none, unless --config names one', () => {
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    expect(readProjectFile(undefined, empty)).toBeUndefined();
    expect(() => readProjectFile('routes.json', empty)).toThrow(new RegExp(`^cannot read ${join(empty, 'routes.json')} \\(ENOENT`, 'u'));
    writeFileSync(join(empty, 'routes.json'), JSON.stringify({ routes: [{ forward_to: '3000' }] }));
    expect(readProjectFile('routes.json', empty)?.file).toBe(join(empty, 'routes.json'));
  });
});

describe('routes', () => {
  it('a / prefix takes every path and leaves it whole', () => {
    for (const text of ['/=3000', '//=3000']) {
      const route = parseRoute(text);
      expect(route.pathPrefix, text).toBe('/');
      expect(route.display).toBe('/ → http://localhost:3000');
      expect(chooseRoute([route], { path: '/a/b', event_type: null })).toEqual({ route, path: '/a/b' });
      expect(chooseRoute([route], { path: '/', event_type: null })).toEqual({ route, path: '/' });
    }
  });

  it('drops every trailing / of a prefix, and blanks around the value', () => {
    expect(parseRoute('/stripe//=4000').pathPrefix).toBe('/stripe');
    expect(parseRoute('  /stripe=4000  ').pathPrefix).toBe('/stripe');
    expect(parseRoute('  event:push=4000 ').eventGlob).toBe('push');
  });

  it('an event route never takes a message without an event type, even for *', () => {
    const route = parseRoute('event:*=3000');
    expect(chooseRoute([route], { path: '/', event_type: null })).toBeNull();
    expect(chooseRoute([route], { path: '/' })).toBeNull();
    expect(chooseRoute([route], { path: '/', event_type: '' })).toEqual({ route, path: '/' });
  });

  it('refuses an empty event glob and a prefix without /', () => {
    expect(() => makeRoute(null, '', '3000')).toThrow(new Error('event: needs a glob, such as event:push or event:checkout.*'));
    expect(() => makeRoute('stripe', null, '3000')).toThrow(new Error('the path prefix "stripe" must start with /'));
  });

  it('knows IPv4-mapped loopback addresses in both spellings', () => {
    for (const host of ['[::ffff:7f00:1]', '[::ffff:127.0.0.1]', '[::ffff:7f12:3456]', '[::1]']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['[::ffff:808:808]', '[::ffff:8.8.8.8]', '[::2]', '[2001:db8::1]']) expect(isLoopbackHost(host), host).toBe(false);
  });
});
