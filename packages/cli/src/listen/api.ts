import type { HookrelayClient } from '@hookrelay/shared';
import type { ListenApi } from './listener.js';
import { openStream, type StreamOptions } from './stream.js';

export type StreamSettings = Omit<StreamOptions, 'after' | 'endpointId'>;

/** The listener's view of the API: the typed client for HTTP, `ws` for the stream. */
export function createListenApi(client: HookrelayClient, endpointId: string, stream: StreamSettings): ListenApi {
  return {
    async latestMessageId() {
      const { data } = await client.inboundEndpoints.get(endpointId);
      return data.latest_message_id ?? null;
    },
    async listen(after) {
      const query: { after?: string; body_encoding: 'base64' } = { body_encoding: 'base64' };
      if (after !== null) query.after = after;
      const { data } = await client.inboundEndpoints.listen(endpointId, query);
      return data;
    },
    async postResult(frame) {
      await client.inboundMessages.result(frame.message_id, {
        message_id: frame.message_id,
        status: frame.status,
        latency_ms: frame.latency_ms,
        error: frame.error,
      });
    },
    openStream(after, handlers) {
      return openStream({ ...stream, endpointId, after }, handlers);
    },
  };
}
