import { BaseCommand } from '../../base-command.js';
import { maskApiKey } from '../../config.js';
import { formatProfiles, type ConfigListView } from '../../format/account.js';

export default class ConfigList extends BaseCommand<typeof ConfigList> {
  protected static override usesRunningDev = false;
  static override summary = 'List the stored profiles; the current one is marked with *.';
  static override description = `API keys are masked to their last four characters. HOOKRELAY_API_URL, HOOKRELAY_API_KEY and the --api-url/--api-key flags override whatever profile is in use.`;

  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json'];

  public async run(): Promise<ConfigListView> {
    const current = this.storedConfig.current_profile ?? null;
    const view: ConfigListView = {
      config_path: this.configPath,
      current_profile: current,
      profiles: Object.entries(this.storedConfig.profiles)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([name, profile]) => ({
          name,
          current: name === current,
          api_url: profile.api_url ?? null,
          api_key_hint: profile.api_key === undefined ? null : maskApiKey(profile.api_key),
        })),
    };
    this.print(formatProfiles(view, this.style.out));
    const overrides = ['HOOKRELAY_API_URL', 'HOOKRELAY_API_KEY', 'HOOKRELAY_PROFILE'].filter(
      (name) => this.env[name] !== undefined && this.env[name] !== '',
    );
    if (overrides.length > 0) {
      this.note(this.style.err.dim(`Set in the environment, and winning over the stored profile: ${overrides.join(', ')}`));
    }
    return view;
  }
}
