import { emptyRecord } from '@hookrelay/shared/own';
import { usageFailure } from './errors.js';

/** RFC 9110 field-name characters ("token"). */
const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/u;

/**
 * One `--header K=V` value. The shape is checked here so that a typo fails before any request;
 * which names are forbidden (Host, webhook-*, …) is the server's rule, answered as INVALID_HEADERS.
 */
export function parseHeaderFlag(input: string): [name: string, value: string] {
  const separator = input.indexOf('=');
  if (separator === -1) {
    throw usageFailure(`--header "${input}" is not in the form NAME=VALUE`, 'Example: --header X-Team=payments');
  }
  const name = input.slice(0, separator).trim();
  const value = input.slice(separator + 1);
  if (!HEADER_NAME_PATTERN.test(name)) {
    throw usageFailure(`--header "${input}": "${name}" is not a valid header name`, 'Header names are letters, digits and !#$%&\'*+.^_`|~- only.');
  }
  if (/[\r\n\0]/u.test(value)) {
    throw usageFailure(`--header "${name}": the value may not contain line breaks or NUL`);
  }
  return [name, value];
}

/** All `--header` values as a map; the same name twice (in any case) is a mistake, not an override. */
export function headersFromFlags(values: readonly string[]): Record<string, string> {
  const headers = emptyRecord<string>();
  const seen = new Map<string, string>();
  for (const input of values) {
    const [name, value] = parseHeaderFlag(input);
    const previous = seen.get(name.toLowerCase());
    if (previous !== undefined) {
      throw usageFailure(`--header "${name}" is given twice (also as "${previous}")`);
    }
    seen.set(name.toLowerCase(), name);
    headers[name] = value;
  }
  return headers;
}
