import type { InboundReplayIn } from '@hookrelay/shared';
import { parseSampleEdit, type SampleEdit } from '@hookrelay/shared/samples';
import { usageFailure } from '../errors.js';
import { replayHeadersFromFlags } from '../headers.js';
import { processInputSource, readFlagText, type MessageInputSource } from '../message-input.js';

/**
 * The `--set PATH=VALUE` edits of a JSON body (`trigger`, `inbound messages replay`), in order: the
 * value is JSON when it reads as a JSON scalar, else text; a path through __proto__, constructor or
 * prototype is refused here, before any request, as the server refuses it.
 */
export function editsFromFlags(values: readonly string[] | undefined): SampleEdit[] {
  return (values ?? []).map((text) => {
    try {
      return parseSampleEdit(text);
    } catch (error) {
      throw usageFailure(`--set: ${(error as Error).message}`);
    }
  });
}

/** The flags of `inbound messages replay` that edit the message. */
export interface ReplayEditFlags {
  set?: string[] | undefined;
  header?: string[] | undefined;
  body?: string | undefined;
  resign?: boolean | undefined;
}

/**
 * What the flags of `inbound messages replay` ask of the server: the body (`--body`, as it is or
 * from `@FILE` / `@-`) or its edits (`--set`), the header edits and `--resign`; undefined without
 * any, for a replay as the message came. `--resign` without an edit is a usage error.
 */
export async function replayEditsFromFlags(flags: ReplayEditFlags, source: MessageInputSource = processInputSource): Promise<InboundReplayIn | undefined> {
  const set = editsFromFlags(flags.set);
  const headers = replayHeadersFromFlags(flags.header ?? []);
  const body = flags.body === undefined ? undefined : (await readFlagText('body', flags.body, source)).text;
  if (flags.resign === true && body === undefined && set.length === 0 && Object.keys(headers).length === 0) {
    throw usageFailure('--resign needs an edit (--set, --header or --body)', 'A replay without edits goes as the message came, re-signed by the server only when it is late.');
  }
  const edits: InboundReplayIn = {
    ...(body === undefined ? {} : { body }),
    ...(set.length > 0 ? { set } : {}),
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(flags.resign === true ? { resign: true } : {}),
  };
  return Object.keys(edits).length === 0 ? undefined : edits;
}
