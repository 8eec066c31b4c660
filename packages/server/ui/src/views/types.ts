import type { InboundEndpointMessageOut } from '@hookrelay/shared';

/**
 * A row of the live list: a row of GET /v1/inbound-endpoints/{id}/messages, or a message the watch
 * socket announced (the same shape).
 */
export type MessageRow = InboundEndpointMessageOut;
