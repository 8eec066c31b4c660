import type { HookrelayClient, ListenFilter } from '@hookrelay/shared';
import type { ListenApi } from './ports.js';
import { openStream, type StreamOptions } from './stream.js';

/** Refused requests read per poll: more than a poll interval's worth at the recording rate. */
const RECENT_REJECTIONS = 50;

export type StreamSettings = Omit<StreamOptions, 'after' | 'endpointId' | 'filter'>;

/**
 * The listener's view of the API: the typed client for HTTP, `ws` for the stream; both filtered
 * alike. `knownLatestMessageId`, the endpoint's newest id as the caller has just read it, answers
 * the first `latestMessageId()`.
 */
export function createListenApi(
  client: HookrelayClient,
  endpointId: string,
  stream: StreamSettings,
  filter: ListenFilter = {},
  knownLatestMessageId?: string | null,
): ListenApi {
  let known = knownLatestMessageId;
  return {
    async latestMessageId(signal) {
      if (known !== undefined) {
        const latest = known;
        known = undefined;
        return latest;
      }
      const { data } = await client.inboundEndpoints.get(endpointId, signal === undefined ? {} : { signal });
      return data.latest_message_id ?? null;
    },
    async listen(after) {
      const query: { after?: string; body_encoding: 'base64'; events?: string; path?: string } = { body_encoding: 'base64' };
      if (after !== null) query.after = after;
      if (filter.events !== undefined) query.events = filter.events;
      if (filter.path !== undefined) query.path = filter.path;
      const { data, meta } = await client.inboundEndpoints.listen(endpointId, query);
      return { messages: data, cursor: meta.cursor?.toLowerCase() ?? null, more: meta.has_more ?? false };
    },
    async postResult(frame) {
      const { type: _type, result_id: resultId, ...report } = frame;
      await client.inboundMessages.result(frame.message_id, report, resultId === undefined ? {} : { resultId });
    },
    openStream(after, handlers) {
      return openStream({ ...stream, endpointId, after, filter }, handlers);
    },
    async recentRejections() {
      const { data } = await client.inboundEndpoints.rejections(endpointId, { limit: RECENT_REJECTIONS });
      return data;
    },
  };
}
