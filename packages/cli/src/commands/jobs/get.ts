import type { BulkJobOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { JOB_ID_DESCRIPTION } from '../../flags/bulk.js';
import { formatBulkJob } from '../../format/bulk-jobs.js';

export default class JobsGet extends BaseCommand<typeof JobsGet> {
  static override summary = 'Show one bulk retry or replay job: what it takes, how far it got.';
  static override description = `"Done" counts the messages retried (or replayed), "Skipped" those deleted after the job began, "Failed" those whose endpoint was deleted meanwhile ("Last error" says which). A running job moves a chunk at a time.

With --json the output is the API's job record.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72',
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72 --json | jq "{status, done, matched}"',
  ];

  static override args = {
    id: Args.string({ description: JOB_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<BulkJobOut> {
    const { data } = await this.client.bulkJobs.get(this.args.id);
    this.print(formatBulkJob(data, this.style.out, this.now()));
    return data;
  }
}
