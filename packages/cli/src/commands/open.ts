import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../flags/inbound.js';
import { inspectorUrl, openInBrowser } from '../inspector.js';

export interface OpenResult {
  url: string;
  /** A browser took the URL. */
  opened: boolean;
  /** Why no browser was started (null when one was, or with --print). */
  reason: string | null;
}

export default class Open extends BaseCommand<typeof Open> {
  static override summary = "Open the server's web inspector in a browser, signed in with this CLI's API key.";
  static override description = `The URL carries the key in its fragment (#key=…), which a browser never sends to a server: it reaches no request line or log. The page keeps it in the tab's sessionStorage only and removes it from the address bar. With ENDPOINT-ID the page opens that inbound endpoint's live message list.

The key and, when given, the endpoint are checked first. The URL is always printed (treat it like the key); when no browser could be started (no DISPLAY or WAYLAND_DISPLAY, xdg-open missing or failing) the command says why and exits 0. --print starts none. With --json the output is {"url","opened","reason"}.`;

  static override examples = [
    { description: 'The endpoint list:', command: '<%= config.bin %> <%= command.id %>' },
    { description: "One endpoint's messages, live:", command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70' },
    { description: 'Print the URL (on a machine without a desktop browser):', command: '<%= config.bin %> <%= command.id %> --print' },
  ];

  static override args = {
    'endpoint-id': Args.string({ description: `${INBOUND_ENDPOINT_ID_DESCRIPTION} Opens its live message list.`, required: false }),
  };

  static override flags = {
    print: Flags.boolean({ summary: 'Print the URL instead of opening a browser.', default: false }),
  };

  public async run(): Promise<OpenResult> {
    const endpointId = this.args['endpoint-id'];
    // A wrong key or endpoint fails here, not on a page the user has to read.
    if (endpointId === undefined) await this.client.whoami();
    else await this.client.inboundEndpoints.get(endpointId);
    const url = inspectorUrl(this.settings.apiUrl, this.settings.apiKey!, endpointId);
    this.print(url);
    if (this.flags.print) return { url, opened: false, reason: null };
    const { opened, reason } = await openInBrowser(url, this.env);
    if (opened) this.note(this.style.err.dim('opened the inspector in your browser'));
    else this.note(`${this.style.err.yellow('no browser was started')}: ${reason ?? 'unknown reason'}; open the URL above yourself`);
    return { url, opened, reason };
  }
}
