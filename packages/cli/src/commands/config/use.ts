import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { storedProfile, writeConfigFile } from '../../config.js';
import { CliErrorCode, CliFailure } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';

export interface ConfigUseResult {
  current_profile: string;
}

export default class ConfigUse extends BaseCommand<typeof ConfigUse> {
  protected static override usesRunningDev = false;
  static override summary = 'Make a stored profile the current one.';
  static override description = 'Commands use the current profile unless --profile or HOOKRELAY_PROFILE names another.';

  static override examples = ['<%= config.bin %> <%= command.id %> staging'];

  static override args = {
    profile: Args.string({ description: 'Name of a profile created by `hookrelay login --profile NAME`.', required: true }),
  };

  public async run(): Promise<ConfigUseResult> {
    const name = this.args.profile;
    if (storedProfile(this.storedConfig, name) === undefined) {
      const known = Object.keys(this.storedConfig.profiles);
      throw new CliFailure(
        CliErrorCode.PROFILE_NOT_FOUND,
        `profile "${name}" does not exist`,
        ExitCode.NOT_FOUND,
        known.length > 0 ? `Stored profiles: ${known.join(', ')}.` : 'Create one with `hookrelay login --profile NAME`.',
      );
    }
    await writeConfigFile(this.configPath, { ...this.storedConfig, current_profile: name });
    this.print(`Now using profile "${name}".`);
    return { current_profile: name };
  }
}
