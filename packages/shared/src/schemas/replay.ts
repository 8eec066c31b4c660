import { z } from 'zod';
import { HeaderName } from './common.js';
import { replayHeaderEditProblem } from '../constants.js';
import { SampleEdits } from './samples.js';

/** Most header edits one replay takes. */
export const MAX_REPLAY_HEADER_EDITS = 50;
/** Longest value a header edit may set. */
export const MAX_REPLAY_HEADER_VALUE_LENGTH = 8192;

/**
 * `{ name: value | null }`: a string replaces every line of that name (in the place of the first,
 * or at the end), null removes them. Names are HTTP header names, case-insensitive, each at most
 * once; values are what HTTP can carry (tab, printable ASCII and Latin-1; never CR, LF or NUL).
 */
export const ReplayHeaderEdits = z
  .record(z.string(), z.union([z.string(), z.null()], { message: 'must be a string (the new value) or null (remove the header)' }))
  .superRefine((headers, ctx) => {
    const names = Object.keys(headers);
    if (names.length > MAX_REPLAY_HEADER_EDITS) {
      ctx.addIssue({ code: 'custom', message: `must hold at most ${MAX_REPLAY_HEADER_EDITS} headers (holds ${names.length})` });
      return;
    }
    const seen = new Map<string, string>();
    for (const name of names) {
      const issue = (message: string) => ctx.addIssue({ code: 'custom', path: [name], message });
      const checked = HeaderName.safeParse(name);
      if (!checked.success) {
        issue(checked.error.issues[0]!.message);
        continue;
      }
      const refused = replayHeaderEditProblem(name);
      if (refused !== null) issue(`cannot be edited: ${refused}`);
      const previous = seen.get(name.toLowerCase());
      if (previous !== undefined) issue(`is the header ${previous} again (names are case-insensitive)`);
      seen.set(name.toLowerCase(), name);
      const value = Object.hasOwn(headers, name) ? headers[name] : null;
      if (typeof value !== 'string') continue;
      if (/[\r\n\0]/u.test(value)) issue('must not contain CR, LF or NUL characters');
      else if (/[^\t\x20-\x7e\x80-\xff]/u.test(value)) issue('may contain only tabs, printable ASCII and Latin-1 characters');
      else if (value.length > MAX_REPLAY_HEADER_VALUE_LENGTH) issue(`must be at most ${MAX_REPLAY_HEADER_VALUE_LENGTH} characters`);
    }
  });
export type ReplayHeaderEdits = z.infer<typeof ReplayHeaderEdits>;

/**
 * POST /v1/inbound-messages/{id}/replay, optional: edits that make the replay an edited copy, a new
 * message of the same endpoint (docs/api.md, Edited replays). `body` (the new body as text) or
 * `set` (edits of the JSON body, the samples' rules), not both; `headers`; `resign`: sign the copy
 * with the endpoint's stored secret (without it the original's signature headers are dropped).
 * Without an edit the replay sends the message again, as it came.
 */
export const InboundReplayIn = z
  .strictObject({
    body: z.string({ message: 'must be a string' }).optional(),
    set: SampleEdits.optional(),
    headers: ReplayHeaderEdits.optional(),
    resign: z.boolean({ message: 'must be true or false' }).optional(),
  })
  .superRefine((value, ctx) => {
    if (value.body !== undefined && value.set !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['set'], message: "must not be given together with body: edit the message's body (set), or give a new one (body)" });
    }
    if (value.resign === true && !hasReplayEdits(value)) {
      ctx.addIssue({ code: 'custom', path: ['resign'], message: 'needs an edit (body, set or headers): a replay without edits goes as the message came' });
    }
  });
export type InboundReplayIn = z.infer<typeof InboundReplayIn>;

/** Whether a replay's body asks for an edited copy (an empty `set` or `headers` edits nothing). */
export function hasReplayEdits(input: InboundReplayIn | undefined): boolean {
  if (input === undefined) return false;
  return input.body !== undefined || (input.set?.length ?? 0) > 0 || Object.keys(input.headers ?? {}).length > 0;
}
