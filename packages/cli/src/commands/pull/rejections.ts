import { PULL_ENDPOINT_ID_DESCRIPTION } from '../../flags/pull.js';
import { RejectionsCommand, rejectionsArgs, rejectionsFlags, rejectionsHelp } from '../../rejections-command.js';

const help = rejectionsHelp('pull');

export default class PullRejections extends RejectionsCommand<typeof PullRejections> {
  static override summary = help.summary;
  static override description = help.description;
  static override examples = help.examples;
  static override args = rejectionsArgs(PULL_ENDPOINT_ID_DESCRIPTION);
  static override flags = rejectionsFlags;
  protected readonly kind = 'pull';
}
