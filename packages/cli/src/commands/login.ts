import { HookrelayApiError } from '@hookrelay/shared/client';
import { BaseCommand } from '../base-command.js';
import { assertApiUrl, DEFAULT_API_URL, storedProfile, writeConfigFile, withProfile } from '../config.js';
import { usageFailure } from '../errors.js';
import { formatLogin, type LoginView } from '../format/account.js';
import { ask } from '../prompt.js';

export default class Login extends BaseCommand<typeof Login> {
  protected static override usesRunningDev = false;
  static override summary = 'Store an API URL and key as a profile, after checking them with the server.';
  static override description = `On a terminal it asks for the API URL and key; otherwise give them with --api-url and --api-key (or HOOKRELAY_API_URL and HOOKRELAY_API_KEY).
The key is checked with GET /v1/whoami before anything is saved. The profile (--profile, default "default") becomes the current one.
Profiles are kept in $HOOKRELAY_CONFIG_DIR/config.json (default ~/.config/hookrelay), readable by you only (mode 0600).`;

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    '<%= config.bin %> <%= command.id %> --api-url https://hooks.example.com --api-key hr_0123456789abcdef0123456789abcdef01234567',
    '<%= config.bin %> <%= command.id %> --profile staging --api-url https://staging.hooks.example.com --api-key hr_…',
  ];

  protected static override mayCreateProfile = true;

  public async run(): Promise<LoginView> {
    const { profile, apiUrlSource, apiKeySource } = this.settings;
    const stored = storedProfile(this.storedConfig, profile);
    const given = (source: string | undefined): boolean => source === 'flag' || source === 'env';

    let apiUrl = this.settings.apiUrl;
    if (!given(apiUrlSource) && this.interactive) {
      apiUrl = (await ask(this.promptStreams, 'API URL', { defaultValue: stored?.api_url ?? DEFAULT_API_URL })).replace(/\/+$/u, '');
      assertApiUrl(apiUrl, 'flag');
    }

    let apiKey = given(apiKeySource) ? this.settings.apiKey : undefined;
    if (apiKey === undefined) {
      if (!this.interactive) {
        throw usageFailure('no API key given, and stdin is not a terminal to ask on', 'Pass --api-key (or set HOOKRELAY_API_KEY).');
      }
      apiKey = await ask(this.promptStreams, 'API key (hr_…)', { hidden: true });
      if (apiKey === '') throw usageFailure('no API key given');
    }

    const client = this.createClient(apiUrl, apiKey);
    let whoami;
    try {
      ({ data: whoami } = await client.whoami());
    } catch (error) {
      if (error instanceof HookrelayApiError) this.note(`Nothing was saved to ${this.configPath}.`);
      throw error;
    }

    const updated = withProfile(this.storedConfig, profile, { api_url: apiUrl, api_key: apiKey });
    updated.current_profile = profile;
    await writeConfigFile(this.configPath, updated);

    const view: LoginView = { ...whoami, profile, api_url: apiUrl, config_path: this.configPath };
    this.print(formatLogin(view, this.style.out));
    return view;
  }
}
