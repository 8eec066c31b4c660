import { Errors, type Hook } from '@oclif/core';
import { CliErrorCode, failureToJson, type FailureReport } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { formatFailure } from '../format/error.js';
import { plainStyle } from '../format/style.js';
import { suggestCommand } from '../suggest.js';

/**
 * An unknown command is a usage error like any other: same output shape, exit code 2, and the
 * command it was probably meant to be. Only suggested, never run: a script that mistyped a delete
 * must not get a different command run for it.
 */
const hook: Hook<'command_not_found'> = async function (options) {
  const name = options.id.replaceAll(':', ' ');
  const visible = options.config.commands.filter((command) => command.hidden !== true).map((command) => command.id);
  const suggestion = suggestCommand(options.id, visible);
  const meant = suggestion === undefined ? undefined : `hookrelay ${suggestion.replaceAll(':', ' ')}`;
  const report: FailureReport = {
    code: CliErrorCode.INVALID_ARGUMENTS,
    message: `unknown command "${name}"${meant === undefined ? '' : `: did you mean \`${meant}\`?`}`,
    exitCode: ExitCode.USAGE,
    requestId: null,
    status: null,
    hint: 'Run `hookrelay --help` for the list of commands.',
    details: undefined,
  };
  const json = (options.argv ?? []).includes('--json');
  process.stderr.write(`${json ? JSON.stringify(failureToJson(report)) : formatFailure(report, plainStyle)}\n`);
  throw new Errors.ExitError(report.exitCode);
};

export default hook;
