import { BaseCommand } from '../base-command.js';
import { storedProfile, withoutApiKey, writeConfigFile } from '../config.js';

export interface LogoutResult {
  profile: string;
  /** false when the profile had no stored key (nothing to do). */
  logged_out: boolean;
}

export default class Logout extends BaseCommand<typeof Logout> {
  protected static override usesRunningDev = false;
  static override summary = "Remove the stored API key of a profile (its API URL is kept).";
  static override description = `This forgets the key on this machine only; the key stays valid on the server until an operator revokes it (hookrelay-server keys revoke).`;

  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --profile staging'];

  public async run(): Promise<LogoutResult> {
    const { profile } = this.settings;
    if (storedProfile(this.storedConfig, profile)?.api_key === undefined) {
      this.print(`Profile "${profile}" has no stored API key; nothing to do.`);
      return { profile, logged_out: false };
    }
    await writeConfigFile(this.configPath, withoutApiKey(this.storedConfig, profile));
    this.print(`${this.style.out.green('Logged out')}: removed the API key of profile "${profile}" from ${this.configPath}.`);
    if (this.env.HOOKRELAY_API_KEY !== undefined && this.env.HOOKRELAY_API_KEY !== '') {
      this.warning('HOOKRELAY_API_KEY is still set in the environment and is still used.');
    }
    return { profile, logged_out: true };
  }
}
