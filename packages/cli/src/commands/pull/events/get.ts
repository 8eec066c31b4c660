import type { PullEventDetailOut } from '@hookrelay/shared';
import { Args, Flags } from '@oclif/core';
import { BaseCommand } from '../../../base-command.js';
import { usageFailure } from '../../../errors.js';
import { formatPullEvent } from '../../../format/pull.js';
import { eventBodyBytes } from '../../../pull-events.js';
import { PULL_ENDPOINT_ID_DESCRIPTION, PULL_EVENT_ID_DESCRIPTION } from '../../../flags/pull.js';

export default class PullEventsGet extends BaseCommand<typeof PullEventsGet> {
  static override summary = 'Fetch one event: the request as received and its body. The first fetch moves it from stored to fetched.';
  static override description = `--body-only writes the exact payload bytes to stdout and nothing else (binary bodies included), to pipe into a program or a file.

The headers are the original lines in order (repeats kept). A JSON body is shown pretty-printed, binary bodies are summarised. A deleted event answers its metadata without a body.

With --json the output is the API's event record; add --base64 to get the body as base64 (its exact bytes) even when it is JSON.`;

  static override examples = [
    '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21',
    {
      description: 'The exact payload, into a file:',
      command: '<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21 --body-only > payload.bin',
    },
    "<%= config.bin %> <%= command.id %> 0190b2c4-7d2e-7a51-9c3f-2b1e4d5a6f70 0190b2c4-8a11-7c3e-9d2f-0b6a5c4d3e21 --json | jq '.headers'",
  ];

  static override args = {
    endpoint: Args.string({ description: PULL_ENDPOINT_ID_DESCRIPTION, required: true }),
    id: Args.string({ description: PULL_EVENT_ID_DESCRIPTION, required: true }),
  };

  static override flags = {
    'body-only': Flags.boolean({ summary: 'Write only the exact payload bytes to stdout.', exclusive: ['base64'] }),
    base64: Flags.boolean({ summary: 'Return the body as base64 (its exact bytes), also when it is JSON.' }),
  };

  public async run(): Promise<PullEventDetailOut | void> {
    const bodyOnly = this.flags['body-only'];
    if (bodyOnly && this.jsonEnabled()) {
      throw usageFailure('--body-only and --json cannot be combined', 'Use --json --base64 for the record with the body as base64.');
    }
    const base64 = bodyOnly || this.flags.base64;
    const { data } = await this.client.pullEvents.get(this.args.endpoint, this.args.id, base64 ? { bodyEncoding: 'base64' } : {});
    if (bodyOnly) {
      const bytes = eventBodyBytes(data);
      await new Promise<void>((resolve, reject) => process.stdout.write(bytes, (error) => (error ? reject(error) : resolve())));
      return;
    }
    this.print(formatPullEvent(data, this.style.out, this.now()));
    return data;
  }
}
