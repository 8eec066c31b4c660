import { emptyRecord } from '@hookrelay/shared/own';
import { usageFailure } from './errors.js';

/** RFC 9110 field-name characters ("token"). */
const HEADER_NAME_PATTERN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/u;

/** A header name and value from `--header "input"`, their shape checked so that a typo fails before any request. */
function checkedHeader(input: string, name: string, value: string): [name: string, value: string] {
  if (!HEADER_NAME_PATTERN.test(name)) {
    throw usageFailure(`--header "${input}": "${name}" is not a valid header name`, 'Header names are letters, digits and !#$%&\'*+.^_`|~- only.');
  }
  if (/[\r\n\0]/u.test(value)) {
    throw usageFailure(`--header "${name}": the value may not contain line breaks or NUL`);
  }
  return [name, value];
}

/** The headers as a map by name (no prototype); the same name twice (in any case) is a mistake, not an override. */
function uniqueHeaders<V>(pairs: readonly (readonly [string, V])[]): Record<string, V> {
  const headers = emptyRecord<V>();
  const seen = new Map<string, string>();
  for (const [name, value] of pairs) {
    const previous = seen.get(name.toLowerCase());
    if (previous !== undefined) {
      throw usageFailure(`--header "${name}" is given twice (also as "${previous}")`);
    }
    seen.set(name.toLowerCase(), name);
    headers[name] = value;
  }
  return headers;
}

/**
 * One `--header K=V` value. The shape is checked here so that a typo fails before any request;
 * which names are forbidden (Host, webhook-*, …) is the server's rule, answered as INVALID_HEADERS.
 */
export function parseHeaderFlag(input: string): [name: string, value: string] {
  const separator = input.indexOf('=');
  if (separator === -1) {
    throw usageFailure(`--header "${input}" is not in the form NAME=VALUE`, 'Example: --header X-Team=payments');
  }
  return checkedHeader(input, input.slice(0, separator).trim(), input.slice(separator + 1));
}

/** All `--header` values as a map; the same name twice (in any case) is a mistake, not an override. */
export function headersFromFlags(values: readonly string[]): Record<string, string> {
  return uniqueHeaders(values.map(parseHeaderFlag));
}

/**
 * One `--header` of an edited replay, as curl reads it: `Name: value` sets the header, `Name:`
 * (nothing after the colon) removes it (null), `Name;` sets it to the empty value.
 */
export function parseReplayHeaderFlag(input: string): [name: string, value: string | null] {
  const colon = input.indexOf(':');
  if (colon === -1) {
    if (input.endsWith(';')) return checkedHeader(input, input.slice(0, -1).trim(), '');
    throw usageFailure(`--header "${input}" is not in the form "Name: value"`, 'Examples: --header "X-Team: payments"; "X-Team:" removes the header, "X-Team;" sends it empty.');
  }
  const name = input.slice(0, colon).trim();
  const value = input.slice(colon + 1).trimStart();
  if (value === '') return [checkedHeader(input, name, '')[0], null];
  return checkedHeader(input, name, value);
}

/** All `--header` values of an edited replay as the API's `headers` (null: remove). */
export function replayHeadersFromFlags(values: readonly string[]): Record<string, string | null> {
  return uniqueHeaders(values.map(parseReplayHeaderFlag));
}
