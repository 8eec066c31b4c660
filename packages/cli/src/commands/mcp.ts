import { installCommand } from '@hookrelay/shared/install-command';
import { Flags } from '@oclif/core';
import { BaseCommand } from '../base-command.js';
import { CliErrorCode, CliFailure } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { terminalText } from '../format/text.js';
import { StopSignals } from '../signals.js';

/** The official MCP SDK: an optional peer of the CLI, installed beside it by those who use `mcp`. */
const MCP_SDK = '@modelcontextprotocol/sdk';

/** Whether an import failed because the SDK (or a part of it) is not installed. */
function isMissingSdk(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === 'ERR_MODULE_NOT_FOUND' && typeof message === 'string' && message.includes(MCP_SDK);
}

export default class Mcp extends BaseCommand<typeof Mcp> {
  // stdout carries the protocol, nothing else.
  static override enableJsonFlag = false;

  static override summary = 'Serve hookrelay to a coding agent as an MCP server on stdin/stdout: read, search, replay, trigger and wait for webhooks.';
  static override description = `The agent starts the command and talks the Model Context Protocol over its stdin and stdout; the server ends when the agent closes stdin. It uses this CLI's settings, as every command does: --api-url / --api-key / --profile, HOOKRELAY_API_URL / HOOKRELAY_API_KEY, the current profile, or the running \`hookrelay dev\`'s server.

Tools that read: list_endpoints, list_messages (event glob, text search, since), get_message (headers, body as text or base64 up to a bound, the app's answers), list_rejections, wait_for_message (from the call's start). Tools that change something: replay_message (with edits: body or set, headers, resign), trigger (a signed sample of a provider), send_event (POST /v1/events), pause_endpoint and resume_endpoint (inbound endpoints). --read-only offers only those that read.

Each tool answers compact JSON whose ids the next call takes; a failure is a tool error whose text is {"error":{"code","message","request_id","status"}}, the API's code or the CLI's (WAIT_TIMEOUT, NETWORK_ERROR). docs/cli.md shows an agent's configuration.`;

  static override examples = [
    { description: "In an agent's MCP configuration (the command and its arguments):", command: '<%= config.bin %> <%= command.id %>' },
    { description: 'Only the tools that read, against a given profile:', command: '<%= config.bin %> <%= command.id %> --read-only --profile staging' },
  ];

  static override flags = {
    'read-only': Flags.boolean({ summary: 'Offer only the tools that read (no replay, trigger, send_event, pause or resume).' }),
  };

  public async run(): Promise<void> {
    // A missing key fails here, at the start, rather than in every tool call.
    const client = this.client;
    const { createMcpServer, serveStdio } = await this.loadServer();
    const readOnly = this.flags['read-only'];
    const server = createMcpServer({ context: { client, runningDev: this.runningDev, now: () => this.now().getTime() }, readOnly, version: this.config.version });
    const source = this.runningDev === undefined ? `${this.settings.apiUrl}` : `${this.settings.apiUrl} (the running hookrelay dev)`;
    process.stderr.write(`hookrelay mcp: serving ${readOnly ? 'the read-only tools' : 'every tool'} for ${terminalText(source)} on stdin/stdout\n`);
    const signals = new StopSignals().install();
    try {
      await serveStdio(server, { input: process.stdin, output: process.stdout, stop: signals.signal });
    } finally {
      signals.dispose();
    }
  }

  /** The MCP server's module, with the SDK and the schemas, loaded only for this command. */
  private async loadServer(): Promise<typeof import('../mcp/server.js')> {
    try {
      return await import('../mcp/server.js');
    } catch (error) {
      if (!isMissingSdk(error)) throw error;
      throw new CliFailure(
        CliErrorCode.CONFIG_ERROR,
        `hookrelay mcp needs the MCP SDK (${MCP_SDK}), which is not installed beside the CLI`,
        ExitCode.GENERIC,
        `Install it where the CLI can load it: ${installCommand([`${MCP_SDK}@1`], this.config.root)}`,
      );
    }
  }
}
