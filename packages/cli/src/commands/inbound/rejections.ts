import { INBOUND_ENDPOINT_ID_DESCRIPTION } from '../../flags/inbound.js';
import { RejectionsCommand, rejectionsArgs, rejectionsFlags, rejectionsHelp } from '../../rejections-command.js';

const help = rejectionsHelp('inbound');

export default class InboundRejections extends RejectionsCommand<typeof InboundRejections> {
  static override summary = help.summary;
  static override description = help.description;
  static override examples = help.examples;
  static override args = rejectionsArgs(INBOUND_ENDPOINT_ID_DESCRIPTION);
  static override flags = rejectionsFlags;
  protected readonly kind = 'inbound';
}
