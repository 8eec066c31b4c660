import type { BulkJobEstimateOut, BulkJobOut, InboundReplayCreateIn } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { bulkJobFlags, bulkWindow, parseStatuses, statusFlag } from '../../flags/bulk.js';
import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../../flags/inbound.js';

export default class InboundReplay extends BaseCommand<typeof InboundReplay> {
  static override summary = "Send an inbound endpoint's messages of a time window again, oldest first: to its forward URL, or to every connected `hookrelay listen`.";
  static override description = `A bulk replay, run by the server as a job (docs/cli.md, Bulk retries and replays): the endpoint's messages received from --since (required) until --until (default: now), in --status (default: any; a comma list or repeated) and of --event-type when given, each replayed as \`inbound messages replay\` replays one. In forward mode each is delivered again, in order; in cli mode each is pushed again, in order, to every listener connected by WebSocket now, whose cursor does not move back (a polling listener does not see them).

The command prints how many match (--dry-run stops there), asks before more than 100 (--yes does not ask; without a terminal --yes is required, exit 2), then shows the job's progress on stderr until it ends. Ctrl-C asks whether to cancel the job or leave it running on the server (exit 130 either way). With --json the output is the job as it started, or with --wait the job once it ended; with --dry-run, { "matched" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --since 2h',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --since 1d --status failed_permanent --dry-run',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 --since 2026-05-01T08:00:00Z --until 2026-05-01T09:00:00Z --yes --json --wait',
  ];

  static override args = {
    endpoint: Args.string({ description: INBOUND_ENDPOINT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    status: statusFlag('Only messages in these statuses, a comma list or repeated. Default: any.'),
    ...bulkJobFlags,
  };

  public async run(): Promise<BulkJobOut | BulkJobEstimateOut> {
    const window = bulkWindow(this.flags, this.now().getTime());
    const statuses = parseStatuses(this.flags.status);
    const filter: Omit<InboundReplayCreateIn, 'dry_run'> = {
      received_after: window.from,
      ...(window.to === undefined ? {} : { received_before: window.to }),
      ...(this.flags['event-type'] === undefined ? {} : { event_type: this.flags['event-type'] }),
      ...(statuses === undefined ? {} : { status: statuses }),
    };
    const endpoint = this.args.endpoint;
    return this.runBulkJob(
      {
        verb: 'replay',
        count: async () => (await this.client.inboundEndpoints.countReplay(endpoint, filter)).data.matched,
        start: async () => (await this.client.inboundEndpoints.startReplay(endpoint, filter)).data,
      },
      { dryRun: this.flags['dry-run'], yes: this.flags.yes, wait: this.flags.wait },
    );
  }
}
