import type { SampleProvider } from '@hookrelay/shared';
import { isProvider, PROVIDERS } from '@hookrelay/shared/providers';
import { Flags } from '@oclif/core';
import type { Env } from '../config.js';
import { usageFailure } from '../errors.js';
import { readProjectFile, type ProjectFile } from '../listen/project-file.js';
import type { ForwardRoute } from '../listen/routes.js';

/** One provider `dev` makes a verifying endpoint for, and the secret its signatures are checked with. */
export interface VerifySetting {
  provider: SampleProvider;
  secret: string;
}

export const verifyFlag = Flags.string({
  summary: "Make an endpoint for this provider that checks its signatures with SECRET (env:NAME reads the variable NAME); repeat it for each provider.",
  description: `PROVIDER is one of ${PROVIDERS.join(', ')}. Each provider gets an inbound endpoint and an ingest URL of its own, kept across restarts; \`hookrelay trigger PROVIDER EVENT\` then sends samples signed with SECRET. Without --verify the verify object of hookrelay.json is used, if there is one; without either, dev makes one endpoint that verifies nothing.`,
  helpValue: 'PROVIDER=SECRET',
  multiple: true,
});

const ENV_PREFIX = 'env:';
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/u;
const PROVIDER_LIST = PROVIDERS.join(', ');

/**
 * Standard Webhooks secrets are `whsec_` + base64 and keyed by the decoded bytes (the server refuses
 * any other when it is stored): told before anything starts rather than after.
 */
function standardWebhooksSecretOk(secret: string): boolean {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  return /^[A-Za-z0-9+/]+={0,2}$/u.test(encoded);
}

/**
 * The secret a value stands for: `env:NAME` the variable NAME of `env` (unset or empty is an error),
 * anything else itself. `where` names the value in errors, which never quote a secret.
 */
function secretOf(where: string, provider: SampleProvider, value: string, env: Env, hint: string): string {
  let secret = value;
  if (value.startsWith(ENV_PREFIX)) {
    const name = value.slice(ENV_PREFIX.length);
    if (!ENV_NAME.test(name)) throw usageFailure(`${where}: "${value}" does not name an environment variable`, 'Write env:NAME, such as env:GITHUB_WEBHOOK_SECRET.');
    const read = Object.hasOwn(env, name) ? env[name] : undefined;
    if (typeof read !== 'string' || read === '') {
      throw usageFailure(`${where}: the environment variable ${name} is not set`, `Export ${name} with the ${provider} webhook secret before starting dev.`);
    }
    secret = read;
  }
  if (secret === '') throw usageFailure(`${where}: the secret is empty`, hint);
  if (provider === 'standard_webhooks' && !standardWebhooksSecretOk(secret)) {
    throw usageFailure(`${where}: a Standard Webhooks secret is whsec_ followed by base64`, 'Copy the whole secret from the sender, whsec_ included.');
  }
  return secret;
}

function noRepeats(settings: readonly VerifySetting[], where: string): void {
  const seen = new Set<SampleProvider>();
  for (const { provider } of settings) {
    if (seen.has(provider)) throw usageFailure(`${where}: ${provider} is given twice`, 'Give each provider once: its endpoint checks one secret.');
    seen.add(provider);
  }
}

/** `--verify PROVIDER=SECRET` values, in order. */
export function parseVerifyFlags(values: readonly string[], env: Env): VerifySetting[] {
  const settings = values.map((value) => {
    const eq = value.indexOf('=');
    // The value may be a secret given alone: it is not quoted back.
    if (eq === -1) throw usageFailure('--verify needs PROVIDER=SECRET (the value given has no =)', `For example --verify github=env:GITHUB_WEBHOOK_SECRET; providers: ${PROVIDER_LIST}.`);
    const name = value.slice(0, eq).trim();
    if (!isProvider(name)) throw usageFailure(`--verify: unknown provider "${name}"`, `Use one of ${PROVIDER_LIST}.`);
    const secret = secretOf(`--verify ${name}`, name, value.slice(eq + 1), env, `Give the secret the sender signs with: --verify ${name}=SECRET (a shell variable that is unset gives an empty one), or --verify ${name}=env:NAME.`);
    return { provider: name, secret };
  });
  noRepeats(settings, '--verify');
  return settings;
}

/** The `verify` object of a project file, its `env:` values read from `env`. */
export function projectVerify(project: ProjectFile, env: Env): VerifySetting[] {
  return project.verify.map(({ provider, secret }) => ({
    provider,
    secret: secretOf(`${project.file}: verify.${provider}`, provider, secret, env, `Write the secret, or env:NAME to read it from the variable NAME.`),
  }));
}

/**
 * What `dev` verifies: `--verify` when given, else the `verify` of the project file (`--config`, or
 * `hookrelay.json` in `cwd` when there is one), else nothing (one endpoint that verifies nothing).
 */
export function verifySettings(flags: { verify?: string[] | undefined; config?: string | undefined }, env: Env, cwd: string): VerifySetting[] {
  if (flags.verify !== undefined && flags.verify.length > 0) return parseVerifyFlags(flags.verify, env);
  let project: ProjectFile | undefined;
  try {
    project = readProjectFile(flags.config, cwd);
  } catch (error) {
    throw usageFailure((error as Error).message, 'See `hookrelay dev --help` for the format of hookrelay.json.');
  }
  return project === undefined ? [] : projectVerify(project, env);
}

/**
 * The routes of each verified provider's endpoint, in the order of `verify`: the routes that name
 * it or no provider, in their order (the first that matches wins), the provider condition fulfilled
 * by the endpoint itself. A route naming a provider dev does not verify, and a provider no route
 * takes, are usage errors: either would silently drop webhooks. Without `verify` there is one
 * endpoint, whose provider routes go by the headers, as in `listen`.
 */
export function routesByProvider(routes: readonly ForwardRoute[], from: string, verify: readonly VerifySetting[]): { provider: SampleProvider; routes: ForwardRoute[] }[] {
  if (verify.length === 0) return [];
  const verified = new Set(verify.map(({ provider }) => provider));
  for (const route of routes) {
    if (route.provider !== null && !verified.has(route.provider)) {
      throw usageFailure(
        `the route ${route.display} (${from}) is for ${route.provider}, which dev does not verify`,
        `Add --verify ${route.provider}=SECRET (or to "verify" in hookrelay.json), or drop the route.`,
      );
    }
  }
  return verify.map(({ provider }) => {
    const own = routes.filter((route) => route.provider === null || route.provider === provider).map((route) => ({ ...route, provider: null }));
    if (own.length === 0) {
      throw usageFailure(`no route takes the webhooks of ${provider}`, `Add one for it, such as --forward-to ${provider}=3000, or a route without a provider (--forward-to 3000).`);
    }
    return { provider, routes: own };
  });
}
