import { homedir } from 'node:os';
import { dirname } from 'node:path';
// The client alone: the package's index also builds every zod schema, which no command needs to start.
import { HookrelayClient } from '@hookrelay/shared/client';
import { Command, Errors, Flags, type Interfaces } from '@oclif/core';
import { supportsColor, supportsColorStderr } from 'chalk';
import {
  assertApiUrl,
  assertProfileName,
  configFilePath,
  readConfigFile,
  storedProfile,
  resolveSettings,
  type ConfigFile,
  type Env,
  type ResolvedSettings,
  processEnvironment,
} from './config.js';
import { readRunningDev, type RunningDev } from './dev/running.js';
import { CliErrorCode, CliFailure, describeFailure, failureToJson, usageFailure } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { formatFailure } from './format/error.js';
import { terminalText } from './format/text.js';
import { colorLevel, createStyle, plainStyle, type Style } from './format/style.js';
import type { PromptStreams } from './prompt.js';
import { runBulkJob, type BulkJobRequest } from './bulk-job.js';
import { suggestFlags } from './suggest.js';

export type CommandFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>;
export type CommandArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>;

/**
 * What every hookrelay command shares: the global flags, one parse, the settings resolved once
 * from flags, environment and profile, the API client, and one way of reporting failure.
 *
 * A command's `run()` returns its data. Under `--json` oclif prints that data as the one JSON
 * document on stdout; otherwise the command prints it through a formatter (see `print`).
 */
export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override enableJsonFlag = true;

  static override baseFlags = {
    'api-url': Flags.string({
      summary: 'API address. Default: HOOKRELAY_API_URL, then the profile, then http://127.0.0.1:8787.',
      helpGroup: 'GLOBAL',
    }),
    'api-key': Flags.string({
      summary: 'API key. Default: HOOKRELAY_API_KEY, then the profile.',
      helpGroup: 'GLOBAL',
    }),
    profile: Flags.string({
      summary: 'Stored profile to use. Default: HOOKRELAY_PROFILE, then the current profile.',
      helpGroup: 'GLOBAL',
    }),
  };

  /** Commands that create a profile (login) may name one that does not exist yet. */
  protected static mayCreateProfile = false;

  /**
   * Whether a running `hookrelay dev` supplies the API address and key (docs/cli.md, Settings).
   * Commands that manage profiles, and dev itself, read only flags, environment and profiles.
   */
  protected static usesRunningDev = true;

  protected flags!: CommandFlags<T>;
  protected args!: CommandArgs<T>;
  protected env!: Env;
  protected configPath!: string;
  protected storedConfig!: ConfigFile;
  protected settings!: ResolvedSettings;
  /** The running `hookrelay dev` whose server and key the settings use; undefined when they are not its. */
  protected runningDev: RunningDev | undefined;
  /** Colours for stdout and for stderr; each honours NO_COLOR and whether its stream is a terminal. */
  protected style: { out: Style; err: Style } = { out: plainStyle, err: plainStyle };

  private readonly clients: HookrelayClient[] = [];
  private defaultClient: HookrelayClient | undefined;

  public override async init(): Promise<void> {
    await super.init();
    this.env = processEnvironment();
    this.style = {
      out: createStyle(colorLevel(this.env, process.stdout.isTTY === true, supportsColor)),
      err: createStyle(colorLevel(this.env, process.stderr.isTTY === true, supportsColorStderr)),
    };
    const ctor = this.ctor as typeof BaseCommand;
    const { args, flags } = await this.parse({
      flags: ctor.flags,
      baseFlags: ctor.baseFlags,
      enableJsonFlag: ctor.enableJsonFlag,
      args: ctor.args,
      strict: ctor.strict,
    });
    this.flags = flags as CommandFlags<T>;
    this.args = args as CommandArgs<T>;

    this.configPath = configFilePath(this.env, homedir());
    this.storedConfig = await readConfigFile(this.configPath);
    const dev = ctor.usesRunningDev ? await readRunningDev(dirname(this.configPath)) : undefined;
    this.settings = resolveSettings(this.flags, this.env, this.storedConfig, dev);
    this.runningDev = this.settings.apiUrlSource === 'dev' ? dev : undefined;
    if (this.settings.profileSource === 'flag' || this.settings.profileSource === 'env') {
      assertProfileName(this.settings.profile);
      if (!ctor.mayCreateProfile && storedProfile(this.storedConfig, this.settings.profile) === undefined) {
        throw new CliFailure(
          CliErrorCode.PROFILE_NOT_FOUND,
          `profile "${this.settings.profile}" does not exist in ${this.configPath}`,
          ExitCode.NOT_FOUND,
          `Create it with \`hookrelay login --profile ${this.settings.profile}\`; \`hookrelay config list\` shows the others.`,
        );
      }
    }
    assertApiUrl(this.settings.apiUrl, this.settings.apiUrlSource);
  }

  /** The API client for the resolved settings; a missing key is an auth failure before any request. */
  protected get client(): HookrelayClient {
    if (this.defaultClient === undefined) {
      if (this.settings.apiKey === undefined) {
        throw new CliFailure(
          CliErrorCode.NO_API_KEY,
          'no API key is configured',
          ExitCode.AUTH,
          'Run `hookrelay login`, set HOOKRELAY_API_KEY, or pass --api-key.',
        );
      }
      this.defaultClient = this.createClient(this.settings.apiUrl, this.settings.apiKey);
    }
    return this.defaultClient;
  }

  protected createClient(apiUrl: string, apiKey: string): HookrelayClient {
    const client = new HookrelayClient({ apiUrl, apiKey, userAgent: `hookrelay-cli/${this.config.version}` });
    this.clients.push(client);
    return client;
  }

  protected get interactive(): boolean {
    return process.stdin.isTTY === true;
  }

  protected get promptStreams(): PromptStreams {
    return { input: process.stdin, output: process.stderr };
  }

  /** Human output of the command, on stdout; nothing under `--json`. */
  protected print(text: string): void {
    if (!this.jsonEnabled()) process.stdout.write(`${text}\n`);
  }

  /** A diagnostic (hint, progress) on stderr; left out under `--json` to keep scripted runs quiet. */
  protected note(text: string): void {
    if (!this.jsonEnabled()) process.stderr.write(`${text}\n`);
  }

  /** A warning on stderr, also under `--json`; `text` is plain (it is escaped whole, server's words and all). */
  protected warning(text: string): void {
    process.stderr.write(`${this.style.err.yellow('warning:')} ${terminalText(text)}\n`);
  }

  protected now(): Date {
    return new Date();
  }

  /** A bulk retry or replay with this command's output, terminal and flags (bulk-job.ts). */
  protected runBulkJob(request: BulkJobRequest, flags: { dryRun: boolean; yes: boolean; wait: boolean }) {
    return runBulkJob(request, {
      client: this.client,
      json: this.jsonEnabled(),
      interactive: this.interactive,
      progressInPlace: process.stderr.isTTY === true,
      columns: () => process.stderr.columns,
      streams: this.promptStreams,
      style: this.style,
      print: (text) => this.print(text),
      note: (text) => this.note(text),
      writeErr: (text) => process.stderr.write(text),
      logJson: (value) => this.logJson(value),
      flags,
    });
  }

  /** Plain JSON, never coloured: scripts pipe it into jq. */
  public override logJson(json: unknown): void {
    process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
  }

  /** Only the fields a script needs: oclif's default serialises the whole error, config and all. */
  public override toErrorJson(error: unknown): unknown {
    return failureToJson(describeFailure(error));
  }

  /**
   * Every failure ends here: stderr gets `CODE: message (request id …)` and a hint, or under
   * `--json` one JSON object; stdout gets nothing; the exit code comes from the one table.
   */
  public override async catch(error: Error & { exitCode?: number }): Promise<never> {
    if (error instanceof Errors.ExitError) throw error;
    const failure = this.withFlagSuggestions(error);
    const report = describeFailure(failure);
    if (this.jsonEnabled()) {
      process.stderr.write(`${JSON.stringify(this.toErrorJson(failure))}\n`);
    } else {
      process.stderr.write(`${formatFailure(report, this.style.err)}\n`);
    }
    this.exit(report.exitCode);
  }

  /** oclif's refusal of an unknown flag, naming the flag of this command each was probably meant to be. */
  private withFlagSuggestions(error: Error): Error {
    const typed = (error as { flags?: unknown }).flags;
    if (!/^Nonexistent flags?:/u.test(error.message) || !Array.isArray(typed) || !typed.every((flag) => typeof flag === 'string')) return error;
    const ctor = this.ctor as typeof BaseCommand;
    const names = [...Object.keys(ctor.flags ?? {}), ...Object.keys(ctor.baseFlags), ...(ctor.enableJsonFlag ? ['json'] : [])];
    return usageFailure(suggestFlags(typed, names));
  }

  public override async finally(error: Error | undefined): Promise<void> {
    // Idle keep-alive sockets would hold the process open after the command is done.
    await Promise.allSettled(this.clients.map((client) => client.close()));
    await super.finally(error);
  }
}
