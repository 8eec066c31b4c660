import { CliErrorCode, CliFailure } from './errors.js';
import { ExitCode } from './exit-codes.js';
import { terminalText } from './format/text.js';
import { confirm, type PromptStreams } from './prompt.js';

export interface DeleteConfirmation {
  /** `--force`: delete without asking. */
  force: boolean;
  /** Whether stdin is a terminal to ask on. */
  interactive: boolean;
  /** What is about to go, for the refusal without a terminal: "message 0190…", "3 events". */
  subject: string;
  /** The question, built only when it is asked (it may fetch what it describes first). */
  question: () => Promise<string> | string;
  streams: PromptStreams;
}

/**
 * The rule of every `delete` command: with `--force` go ahead; on a terminal ask (anything but
 * y/yes aborts, exit 1); without one refuse with CONFIRMATION_REQUIRED (exit 2) before any request
 * that changes anything.
 */
export async function confirmDeletion(options: DeleteConfirmation): Promise<void> {
  if (options.force) return;
  if (!options.interactive) {
    throw new CliFailure(
      CliErrorCode.CONFIRMATION_REQUIRED,
      `refusing to delete ${options.subject} without confirmation: stdin is not a terminal`,
      ExitCode.USAGE,
      'Pass --force to delete without asking.',
    );
  }
  // The question may name what the server holds (an endpoint's URL or name): text, never controls.
  const yes = await confirm(options.streams, terminalText(await options.question()));
  if (!yes) throw new CliFailure(CliErrorCode.ABORTED, 'not deleted', ExitCode.GENERIC);
}
