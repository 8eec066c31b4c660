import type { BulkJobOut } from '@hookrelay/shared';
import { Args } from '@oclif/core';
import { BaseCommand } from '../../base-command.js';
import { JOB_ID_DESCRIPTION } from '../../flags/bulk.js';
import { formatJobOutcome } from '../../format/bulk-jobs.js';

export default class JobsCancel extends BaseCommand<typeof JobsCancel> {
  static override summary = 'Stop a running bulk retry or replay job after the chunk it is on.';
  static override description = `What the job retried stays retried; the messages it had not reached are left as they are. A job that has ended already is shown as it is.

With --json the output is the API's job record.`;

  static override examples = ['<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f72'];

  static override args = {
    id: Args.string({ description: JOB_ID_DESCRIPTION, required: true }),
  };

  public async run(): Promise<BulkJobOut> {
    const { data } = await this.client.bulkJobs.cancel(this.args.id);
    this.print(formatJobOutcome(data, this.style.out));
    return data;
  }
}
