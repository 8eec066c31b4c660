import type { BulkJobEstimateOut, BulkJobOut, BulkRetryFilterIn, MessageRetryOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { usageFailure } from '../../errors.js';
import { bulkJobFlags, bulkWindow, parseStatuses, statusFlag } from '../../flags/bulk.js';
import { MESSAGE_ID_DESCRIPTION } from '../../flags/message.js';
import { formatMessageRetry } from '../../format/messages.js';

/** The flags that make it a bulk retry; none of them goes with a message id. */
const BULK_FLAGS = ['endpoint', 'owner', 'event-type', 'status', 'since', 'until', 'dry-run', 'yes', 'wait'] as const;

export default class MessagesRetry extends BaseCommand<typeof MessagesRetry> {
  static override summary = 'Deliver a message again now, with the whole retry schedule; or, with --endpoint or --owner and --since, every message that failed in a time window.';
  static override description = `With a message id: a message waiting for its next retry is sent at once; a finished one (succeeded or failed_permanent) is sent again. A deleted message cannot be retried (NOT_FOUND, exit 4). With --json the output is { "message_id", "status" }: queued, or delivering when an attempt is in flight (the message is then delivered again once it ends).

Without an id it is a bulk retry, run by the server as a job (docs/cli.md, Bulk retries and replays): the messages of one endpoint (--endpoint) or of one owner's endpoints (--owner) created from --since (required) until --until (default: now), in --status (default failed_permanent; a comma list or repeated), of --event-type when given, oldest first. The command prints how many match (--dry-run stops there), asks before more than 100 (--yes does not ask; without a terminal --yes is required, exit 2), then shows the job's progress on stderr until it ends. Ctrl-C asks whether to cancel the job or leave it running on the server (exit 130 either way). With --json the output is the job as it started, or with --wait the job once it ended; with --dry-run, { "matched" }.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f71',
    '<%= config.bin %> <%= command.id %> --endpoint ep_0123456789abcdef0123456789abcdef --since 2h --dry-run',
    '<%= config.bin %> <%= command.id %> --owner acme --since 2026-05-01T08:00:00Z --until 2026-05-01T10:00:00Z --yes',
    {
      description: 'In a script: retry, wait for the job, and print how many went:',
      command: '<%= config.bin %> <%= command.id %> --endpoint ep_0123456789abcdef0123456789abcdef --since 1d --yes --json --wait | jq .done',
    },
  ];

  static override args = {
    id: Args.string({ description: `${MESSAGE_ID_DESCRIPTION} Without one, the flags choose the messages.`, required: false }),
  };

  static override flags = {
    endpoint: Flags.string({ summary: 'Bulk: the messages of this outbound endpoint (ep_ followed by 32 hex characters).', exclusive: ['owner'], helpValue: 'ID' }),
    owner: Flags.string({ summary: "Bulk: the messages of this owner's endpoints.", exclusive: ['endpoint'], helpValue: 'OWNER' }),
    status: statusFlag('Bulk: only messages in these statuses, a comma list or repeated. Default: failed_permanent.'),
    ...bulkJobFlags,
  };

  public async run(): Promise<MessageRetryOut | BulkJobOut | BulkJobEstimateOut> {
    const id = this.args.id;
    const given = BULK_FLAGS.filter((name) => this.flags[name] !== undefined && this.flags[name] !== false);
    if (id !== undefined) {
      if (given.length > 0) throw usageFailure(`${given.map((name) => `--${name}`).join(', ')} retry many messages and take no message id`, 'Give the message id alone, or drop it to retry by --endpoint or --owner.');
      const { data } = await this.client.messages.retry(id);
      this.print(formatMessageRetry(data, this.style.out));
      return data;
    }
    if (this.flags.endpoint === undefined && this.flags.owner === undefined) {
      throw usageFailure('give a message id, or --endpoint or --owner with --since to retry many', 'hookrelay messages retry ID, or hookrelay messages retry --endpoint EP --since 2h');
    }
    const window = bulkWindow(this.flags, this.now().getTime());
    const statuses = parseStatuses(this.flags.status);
    const filter: BulkRetryFilterIn = {
      created_after: window.from,
      ...(window.to === undefined ? {} : { created_before: window.to }),
      ...(this.flags.endpoint === undefined ? {} : { endpoint_id: this.flags.endpoint }),
      ...(this.flags.owner === undefined ? {} : { owner_id: this.flags.owner }),
      ...(this.flags['event-type'] === undefined ? {} : { event_type: this.flags['event-type'] }),
      ...(statuses === undefined ? {} : { status: statuses }),
    };
    return this.runBulkJob(
      {
        verb: 'retry',
        count: async () => (await this.client.bulkJobs.countRetry(filter)).data.matched,
        start: async () => (await this.client.bulkJobs.startRetry(filter)).data,
      },
      { dryRun: this.flags['dry-run'], yes: this.flags.yes, wait: this.flags.wait },
    );
  }
}
