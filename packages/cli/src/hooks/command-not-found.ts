import { Errors, type Hook } from '@oclif/core';
import { CliErrorCode, failureToJson, type FailureReport } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { formatFailure } from '../format/error.js';
import { plainStyle } from '../format/style.js';

/** An unknown command is a usage error like any other: same output shape, exit code 2. */
const hook: Hook<'command_not_found'> = async function (options) {
  const name = options.id.replaceAll(':', ' ');
  const report: FailureReport = {
    code: CliErrorCode.INVALID_ARGUMENTS,
    message: `unknown command "${name}"`,
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
