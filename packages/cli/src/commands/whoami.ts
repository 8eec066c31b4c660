import { BaseCommand } from '../base-command.js';
import { formatWhoami, type WhoamiView } from '../format/account.js';

export default class Whoami extends BaseCommand<typeof Whoami> {
  static override summary = 'Show the project and API key the CLI is using, and where they came from.';
  static override description = `With --json: the API's whoami object (project_id, project_name, api_key_id) plus api_url and profile (null when the key came from a flag or the environment).`;

  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> --json | jq -r .project_id'];

  public async run(): Promise<WhoamiView> {
    const { data } = await this.client.whoami();
    const view: WhoamiView = {
      ...data,
      api_url: this.settings.apiUrl,
      profile: this.settings.apiKeySource === 'profile' ? this.settings.profile : null,
    };
    this.print(formatWhoami(view, this.settings.apiKeySource, this.style.out));
    return view;
  }
}
