/** Shapes of the endpoint message list (GET /v1/inbound-endpoints/{id}/messages) as the page reads them. */
export interface AnswerSummary {
  listener: string;
  status: number | null;
  latency_ms: number | null;
  error: string | null;
  answered_at?: string;
}

export interface Answer extends AnswerSummary {
  response_headers?: [string, string][];
  response_body?: string | null;
  response_body_truncated?: boolean;
}

export interface MessageRow {
  id: string;
  inbound_endpoint_id: string;
  status: string;
  method: string;
  path: string;
  query: string;
  content_type: string;
  size_bytes: number;
  payload_sha256: string;
  event_type?: string | null;
  verified?: string[];
  replay_count: number;
  received_at: string;
  response_status: number | null;
  response_latency_ms: number | null;
  answers?: AnswerSummary[];
}

/** The inbound endpoint list row, with the counts the inspector shows when the server has them. */
export interface EndpointRow {
  id: string;
  name: string;
  description: string;
  url: string;
  mode: 'cli' | 'forward';
  paused: boolean;
  ephemeral: boolean;
  created_at: string;
  connected_listeners?: number;
  messages_24h?: number;
}
