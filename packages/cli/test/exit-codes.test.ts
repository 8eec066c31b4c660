import { ERROR_CODES, HookrelayApiError, HookrelayNetworkError, HookrelayWrongServerError } from '@hookrelay/shared';
import { Errors } from '@oclif/core';
import { describe, expect, it } from 'vitest';
import { cleanOclifMessage, CliFailure, describeFailure, failureToJson, usageFailure } from '../src/errors.js';
import { EXIT_CODE_BY_API_ERROR, ExitCode, exitCodeForApiError } from '../src/exit-codes.js';

describe('exit code table', () => {
  it('has the documented numbers', () => {
    expect(ExitCode).toMatchObject({ OK: 0, GENERIC: 1, USAGE: 2, AUTH: 3, NOT_FOUND: 4, CONFLICT: 5, SERVER: 6, NETWORK: 7 });
  });

  it('maps every API error code', () => {
    for (const code of ERROR_CODES) expect(EXIT_CODE_BY_API_ERROR[code]).toBeTypeOf('number');
  });

  it.each([
    ['UNAUTHORIZED', 401, 3],
    ['NOT_FOUND', 404, 4],
    ['ENDPOINT_NOT_FOUND', 404, 4],
    ['DUPLICATE_URL', 409, 5],
    ['DUPLICATE_NAME', 409, 5],
    ['IDEMPOTENCY_CONFLICT', 409, 5],
    ['INVALID_REQUEST', 400, 2],
    ['INVALID_HEADERS', 400, 2],
    ['INTERNAL_ERROR', 500, 6],
    ['SERVICE_UNAVAILABLE', 503, 6],
    ['DELETE_FAILED', 500, 6],
  ])('%s (HTTP %i) exits %i', (code, status, exit) => {
    expect(exitCodeForApiError(code, status)).toBe(exit);
  });

  it.each([
    [401, 3],
    [403, 3],
    [404, 4],
    [409, 5],
    [422, 2],
    [429, 1],
    [502, 6],
  ])('an unknown code falls back to its HTTP status %i → %i', (status, exit) => {
    expect(exitCodeForApiError('SOMETHING_NEW', status)).toBe(exit);
  });

  it('a code named like an inherited member is unknown, not a lookup of Object.prototype', () => {
    expect(exitCodeForApiError('constructor', 400)).toBe(ExitCode.USAGE);
    expect(exitCodeForApiError('toString', 404)).toBe(ExitCode.NOT_FOUND);
    expect(exitCodeForApiError('__proto__', 500)).toBe(ExitCode.SERVER);
  });
});

describe('describeFailure', () => {
  it('carries the API error code, message, request id and status', () => {
    const report = describeFailure(new HookrelayApiError('UNAUTHORIZED', 'API key is invalid or missing', 401, 'req_1'));
    expect(report).toMatchObject({ code: 'UNAUTHORIZED', message: 'API key is invalid or missing', exitCode: 3, requestId: 'req_1', status: 401 });
    expect(report.hint).toContain('hookrelay login');
    expect(failureToJson(report)).toEqual({
      error: { code: 'UNAUTHORIZED', message: 'API key is invalid or missing', request_id: 'req_1', status: 401 },
    });
  });

  it('keeps validation details', () => {
    const details = [{ path: 'ttl_minutes', message: 'must be at least 1' }];
    const report = describeFailure(new HookrelayApiError('INVALID_REQUEST', 'ttl_minutes: must be at least 1', 400, 'r', details));
    expect(report.exitCode).toBe(2);
    expect(failureToJson(report).error.details).toEqual(details);
  });

  it('maps network errors to 7', () => {
    const report = describeFailure(new HookrelayNetworkError('could not reach http://127.0.0.1:1', 'http://127.0.0.1:1/v1/whoami'));
    expect(report).toMatchObject({ code: 'NETWORK_ERROR', exitCode: 7, requestId: null, status: null });
  });

  it('maps an answer that is not the API, and a scheme that does not match the server, to CONFIG_ERROR (1), not 4 or 7', () => {
    const notApi = describeFailure(new HookrelayWrongServerError('http://h/x does not answer as a hookrelay API', 'http://h/x/v1/whoami', 'not_api', 404));
    expect(notApi).toMatchObject({ code: 'CONFIG_ERROR', exitCode: 1, status: null });
    expect(notApi.hint).toContain('HOOKRELAY_API_URL');
    const scheme = describeFailure(new HookrelayWrongServerError('https://h answers plain HTTP', 'https://h/v1/whoami', 'https_to_plain_http'));
    expect(scheme).toMatchObject({ code: 'CONFIG_ERROR', exitCode: 1 });
    expect(scheme.hint).toContain('scheme');
  });

  it("maps a hookrelay server's ROUTE_NOT_FOUND to CONFIG_ERROR (1) naming the base address, with the server's request id", () => {
    const answer = new HookrelayApiError('ROUTE_NOT_FOUND', 'no route for GET /v1/v1/whoami', 404, 'req-1');
    const report = describeFailure(
      new HookrelayWrongServerError('http://h:8787/v1 is not the base address', 'http://h:8787/v1/v1/whoami', 'not_base_address', 404, { cause: answer, apiUrl: 'http://h:8787/v1' }),
    );
    expect(report).toMatchObject({
      code: 'CONFIG_ERROR',
      exitCode: 1,
      message: "http://h:8787/v1 is not the hookrelay API's base address (HOOKRELAY_API_URL should be the server's root, e.g. http://127.0.0.1:8787, without /v1)",
      requestId: 'req-1',
      status: 404,
    });
    expect(report.hint).toContain('"no route for GET /v1/v1/whoami"');
    expect(report.hint).toContain('HOOKRELAY_API_URL');
    // The code alone, from a path that does not go through the client (a socket's refused upgrade), is no "not found" either.
    expect(describeFailure(answer)).toMatchObject({ code: 'ROUTE_NOT_FOUND', exitCode: 1 });
    expect(exitCodeForApiError('ROUTE_NOT_FOUND', 404)).toBe(1);
  });

  it('keeps a CliFailure as it is', () => {
    const report = describeFailure(usageFailure('bad', 'do this'));
    expect(report).toMatchObject({ code: 'INVALID_ARGUMENTS', message: 'bad', exitCode: 2, hint: 'do this' });
  });

  it('turns an oclif parse error into a one-line usage error', () => {
    const error = new Errors.CLIError('Parsing --ttl \n\tExpected an integer but received: abc\nSee more help with --help', { exit: 2 });
    expect(describeFailure(error)).toMatchObject({
      code: 'INVALID_ARGUMENTS',
      message: 'Parsing --ttl: Expected an integer but received: abc',
      exitCode: 2,
    });
  });

  it('reports anything else as a generic failure', () => {
    expect(describeFailure(new Error('boom'))).toMatchObject({ code: 'CLI_ERROR', message: 'boom', exitCode: 1 });
    expect(describeFailure('text')).toMatchObject({ code: 'CLI_ERROR', exitCode: 1 });
  });

  it('never serialises more than the small error object', () => {
    const report = describeFailure(new CliFailure('NO_API_KEY', 'no API key is configured', 3, 'run login'));
    expect(Object.keys(failureToJson(report).error).sort()).toEqual(['code', 'message', 'request_id', 'status']);
  });
});

describe('cleanOclifMessage', () => {
  it('joins multi-line messages', () => {
    expect(cleanOclifMessage('The following error occurred:\n  Missing required flag url\nSee more help with --help')).toBe(
      'Missing required flag url',
    );
    expect(cleanOclifMessage('The following errors occurred:\n  A\n  B\nSee more help with --help')).toBe('A; B');
  });
});
