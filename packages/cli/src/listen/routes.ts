import { isIP } from 'node:net';
import type { SampleProvider } from '@hookrelay/shared';
import { globToRegExp } from '@hookrelay/shared/glob';
import { detectProvider, isProvider, PROVIDERS } from '@hookrelay/shared/providers';
import { parseForwardTo, type ForwardTarget } from './target.js';

/**
 * One `--forward-to` route: `[PROVIDER=][PATH-PREFIX|event:GLOB=]TARGET`. A route without a
 * condition takes every message. A path prefix matches whole segments (`/stripe` takes `/stripe` and
 * `/stripe/x`, not `/stripes`) and is removed before the rest of the path is appended to the target.
 * A provider takes that provider's webhooks: in `listen`, those whose headers name it; in `dev
 * --verify`, those of the provider's own endpoint.
 */
export interface ForwardRoute {
  provider: SampleProvider | null;
  pathPrefix: string | null;
  eventGlob: string | null;
  /** `eventGlob` compiled once (`*`: any run of characters), as the server's --events filter reads it. */
  eventPattern: RegExp | null;
  target: ForwardTarget;
  /** `/stripe → http://localhost:4000`, for people. */
  display: string;
}

/** The message fields that choose a route. */
export interface RoutableMessage {
  path: string;
  event_type?: string | null | undefined;
  /** The header lines, which name the provider (read only when a route has one). */
  raw_headers?: readonly (readonly [string, string])[] | undefined;
}

function normalisePrefix(prefix: string): string {
  const trimmed = prefix.replace(/\/+$/u, '');
  return trimmed === '' ? '/' : trimmed;
}

/** The path left once `prefix` is removed (`/` when nothing is), or null when the prefix does not match. */
export function stripPrefix(prefix: string, path: string): string | null {
  if (prefix === '/') return path;
  if (path === prefix) return '/';
  if (path.startsWith(`${prefix}/`)) return path.slice(prefix.length);
  return null;
}

function describe(provider: string | null, pathPrefix: string | null, eventGlob: string | null, target: ForwardTarget): string {
  const when = [provider, pathPrefix, eventGlob === null ? null : `event:${eventGlob}`].filter((part) => part !== null).join(' ');
  return when === '' ? target.display : `${when} → ${target.display}`;
}

export function makeRoute(pathPrefix: string | null, eventGlob: string | null, target: string, provider: SampleProvider | null = null): ForwardRoute {
  if (pathPrefix !== null && !pathPrefix.startsWith('/')) throw new Error(`the path prefix "${pathPrefix}" must start with /`);
  if (eventGlob !== null && eventGlob === '') throw new Error('event: needs a glob, such as event:push or event:checkout.*');
  const parsed = parseForwardTo(target);
  const prefix = pathPrefix === null ? null : normalisePrefix(pathPrefix);
  return {
    provider,
    pathPrefix: prefix,
    eventGlob,
    eventPattern: eventGlob === null ? null : globToRegExp(eventGlob),
    target: parsed,
    display: describe(provider, prefix, eventGlob, parsed),
  };
}

/** A word and `=` at the start: a provider's name, the one condition that is a bare word (no target starts so). */
const PROVIDER_CONDITION = /^([A-Za-z][A-Za-z0-9_-]*)=/u;

/**
 * One `--forward-to` value. Only a value starting with a provider's name and `=`, with `/` or with
 * `event:` carries a condition, so a target URL whose query holds `=` is read as a plain target.
 */
export function parseRoute(value: string): ForwardRoute {
  const text = value.trim();
  const word = PROVIDER_CONDITION.exec(text)?.[1];
  if (word === undefined) return conditionRoute(value, text, null);
  if (!isProvider(word)) throw new Error(`"${word}" is not a provider: a route's provider is one of ${PROVIDERS.join(', ')}`);
  const rest = text.slice(word.length + 1).trim();
  if (rest === '') throw new Error(`"${value}" has no target after =`);
  if (isProvider(PROVIDER_CONDITION.exec(rest)?.[1] ?? '')) throw new Error(`"${value}" names two providers: a route takes one`);
  return conditionRoute(value, rest, word);
}

function conditionRoute(value: string, text: string, provider: SampleProvider | null): ForwardRoute {
  if (text.startsWith('/') || text.startsWith('event:')) {
    const eq = text.indexOf('=');
    if (eq === -1) throw new Error(`"${value}" has a condition but no target: write ${text}=3000`);
    const condition = text.slice(0, eq);
    const target = text.slice(eq + 1);
    if (target === '') throw new Error(`"${value}" has no target after =`);
    return condition.startsWith('event:')
      ? makeRoute(null, condition.slice('event:'.length), target, provider)
      : makeRoute(condition, null, target, provider);
  }
  return makeRoute(null, null, text, provider);
}

export interface RouteChoice {
  route: ForwardRoute;
  /** The message's path with the route's prefix removed. */
  path: string;
}

/** The first route that takes the message, or null when none does. */
export function chooseRoute(routes: readonly ForwardRoute[], message: RoutableMessage): RouteChoice | null {
  // Judged once, and only when a route asks for a provider.
  let provider: SampleProvider | null | undefined;
  for (const route of routes) {
    if (route.provider !== null) {
      if (provider === undefined) provider = detectProvider(message.raw_headers ?? []);
      if (provider !== route.provider) continue;
    }
    if (route.eventPattern !== null) {
      const type = message.event_type;
      if (typeof type !== 'string' || !route.eventPattern.test(type)) continue;
    }
    if (route.pathPrefix === null) return { route, path: message.path };
    const rest = stripPrefix(route.pathPrefix, message.path);
    if (rest !== null) return { route, path: rest };
  }
  return null;
}

/** `localhost`, `*.localhost`, 127.0.0.0/8, ::1 and ::ffff:127.x: names that cannot leave the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/gu, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  // WHATWG URL parsing has already compressed IPv6 (`[0:0:0:0:0:0:0:1]` → `[::1]`).
  if (isIP(host) === 6) return host === '::1' || host.startsWith('::ffff:127.') || host.startsWith('::ffff:7f');
  return false;
}
