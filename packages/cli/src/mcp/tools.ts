import {
  MCP_BODY,
  McpEndpointIn,
  McpGetMessageIn,
  McpListEndpointsIn,
  McpListMessagesIn,
  McpListRejectionsIn,
  McpReplayMessageIn,
  McpSendEventIn,
  McpTriggerIn,
  McpWaitForMessageIn,
  type InboundEndpointMessagesQuery,
  type InboundMessageOut,
  type InboundReplayIn,
  type RejectionsQuery,
} from '@hookrelay/shared';
import type { HookrelayClient } from '@hookrelay/shared/client';
import type { AnySchema, SchemaOutput } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import { requireRunningDevEndpoint, type RunningDev } from '../dev/running.js';
import { parseTimeFlag } from '../flags/time.js';
import { inboundMessageMatcher, waitForInboundMessage } from '../inbound-wait.js';
import { ZERO_CURSOR } from '../listen/ports.js';
import { WaitDeadline } from '../wait.js';
import { inboundEndpointRow, messageRecord, messageRow, outboundEndpointRow, rejectionRow, type BodyAs } from './results.js';

/** What every tool call runs with: the API client of the command's settings and the running dev. */
export interface McpContext {
  client: HookrelayClient;
  runningDev: RunningDev | undefined;
  now(): number;
}

export interface McpTool {
  name: string;
  title: string;
  description: string;
  /** Whether the tool only reads (offered under --read-only). */
  readOnly: boolean;
  /** Whether it can make the endpoint refuse what senders post (MCP's destructiveHint). */
  destructive?: boolean;
  input: AnySchema;
  /** Its answer, as JSON; a failure throws (the API's error, a CliFailure). */
  run(input: unknown, context: McpContext, call: ToolCall): Promise<unknown>;
}

/** One call of a tool. */
export interface ToolCall {
  /** Aborts when the client cancels the call. */
  signal: AbortSignal;
  /** Tells the client how far a long call is (a no-op unless it asked for progress). */
  progress(done: number, total: number, message: string): Promise<void>;
}

function tool<S extends AnySchema>(spec: Omit<McpTool, 'input' | 'run'> & { input: S; run(input: SchemaOutput<S>, context: McpContext, call: ToolCall): Promise<unknown> }): McpTool {
  return spec as McpTool;
}

const DEFAULT_WAIT_SECONDS = 30;
/** How often a wait tells the client it is still waiting. */
const PROGRESS_EVERY_SECONDS = 5;

/** One message's record with its body in base64, of at most what any call may be given. */
async function fetchMessage(client: HookrelayClient, id: string, signal: AbortSignal): Promise<InboundMessageOut> {
  return (await client.inboundMessages.get(id, { body_encoding: 'base64', body_max_bytes: MCP_BODY.maxBytes }, { signal })).data;
}

const bodyOptions = (input: { max_body_bytes?: number | undefined; body_as?: BodyAs | undefined }): [number, BodyAs] => [input.max_body_bytes ?? MCP_BODY.defaultMaxBytes, input.body_as ?? 'auto'];

/** A page of what was received, newest first: `limit` (default 20), from `since` on, after `cursor`. */
function recentPage(input: { limit?: number | undefined; since?: string | undefined; cursor?: string | undefined }, now: number): Partial<RejectionsQuery> {
  return {
    limit: input.limit ?? 20,
    ...(input.since === undefined ? {} : { received_after: parseTimeFlag('since', input.since, now) }),
    ...(input.cursor === undefined ? {} : { cursor: input.cursor }),
  };
}

const listEndpoints = tool({
  name: 'list_endpoints',
  title: 'List endpoints',
  description:
    'The inbound endpoints (where providers send webhooks; default) or the outbound ones (where hookrelay delivers your events). Each row has the id the other tools take as endpoint_id; pass next_cursor back as cursor for more.',
  readOnly: true,
  input: McpListEndpointsIn,
  async run(input, { client }) {
    const query = { ...(input.limit === undefined ? {} : { limit: input.limit }), ...(input.cursor === undefined ? {} : { cursor: input.cursor }) };
    if (input.kind === 'outbound') {
      const { data, meta } = await client.endpoints.list(query);
      return { endpoints: data.map(outboundEndpointRow), next_cursor: meta.next_cursor ?? null };
    }
    const { data, meta } = await client.inboundEndpoints.list(query);
    return { endpoints: data.map(inboundEndpointRow), next_cursor: meta.next_cursor ?? null };
  },
});

const listMessages = tool({
  name: 'list_messages',
  title: 'List received webhooks',
  description:
    "The webhooks an inbound endpoint received, newest first, filtered by event type (a glob), a text their body or a header holds, a start time and the app's answer. Rows are summaries: get_message gives one with its headers, body and the app's answers.",
  readOnly: true,
  input: McpListMessagesIn,
  async run(input, { client, now }, { signal }) {
    const query: Partial<InboundEndpointMessagesQuery> = {
      ...recentPage(input, now()),
      ...(input.event === undefined ? {} : { event_type: input.event }),
      ...(input.text === undefined ? {} : { q: input.text }),
      ...(input.answer === undefined ? {} : { answer: input.answer }),
    };
    const { data, meta } = await client.inboundEndpoints.messages(input.endpoint_id, query, { signal });
    return { messages: data.map(messageRow), next_cursor: meta.next_cursor ?? null, ...(meta.search === undefined ? {} : { search: meta.search }) };
  },
});

const getMessage = tool({
  name: 'get_message',
  title: 'Get a received webhook',
  description:
    "One inbound message: its request as received (method, path, query, header lines in order), its body (text when it is UTF-8, else base64, cut at max_body_bytes), and the answers of the local app each listener forwarded it to (status, error, headers, body).",
  readOnly: true,
  input: McpGetMessageIn,
  async run(input, { client }, { signal }) {
    return messageRecord(await fetchMessage(client, input.message_id, signal), ...bodyOptions(input));
  },
});

const listRejections = tool({
  name: 'list_rejections',
  title: 'List refused requests',
  description:
    "Requests an inbound endpoint's ingest URL refused (a signature that did not verify, a paused endpoint, a body too large, …), newest first, each with the reason and what to check. They are not messages: nothing was stored or forwarded.",
  readOnly: true,
  input: McpListRejectionsIn,
  async run(input, { client, now }) {
    const { data, meta } = await client.inboundEndpoints.rejections(input.endpoint_id, recentPage(input, now()));
    return { rejections: data.map(rejectionRow), next_cursor: meta.next_cursor ?? null };
  },
});

const waitForMessage = tool({
  name: 'wait_for_message',
  title: 'Wait for a webhook',
  description:
    'Waits for the first webhook to arrive at an inbound endpoint after the call starts whose event type and sub-path match the globs (edited copies of replay_message included), and answers it as get_message does; a WAIT_TIMEOUT error when none came within timeout_seconds. It only reads: listeners still get the message.',
  readOnly: true,
  input: McpWaitForMessageIn,
  async run(input, { client }, { signal, progress }) {
    const seconds = input.timeout_seconds ?? DEFAULT_WAIT_SECONDS;
    const filter = [input.event === undefined ? '' : ` with event ${input.event}`, input.path === undefined ? '' : ` at path ${input.path}`].join('');
    const deadline = new WaitDeadline(seconds * 1000, `no message${filter} arrived at inbound endpoint ${input.endpoint_id}`);
    const startedAt = Date.now();
    // The endpoint's newest message at the call's start, by the server's own order: what becomes
    // visible after it is newer (docs/architecture.md, Ordering), whatever either clock says.
    const newest = await deadline.within((within) => client.inboundEndpoints.messages(input.endpoint_id, { limit: 1 }, { signal: AbortSignal.any([within, signal]) }));
    const start = newest.data[0]?.id ?? ZERO_CURSOR;
    await progress(0, seconds, `waiting for a message${filter} after ${start}`);
    let reported = 0;
    const matches = inboundMessageMatcher(input);
    const found = await waitForInboundMessage(client, input.endpoint_id, start, matches, deadline, signal, async () => {
      // A client that resets its timeout on progress can wait longer than its own request timeout.
      const elapsed = Math.floor((Date.now() - startedAt) / 1000);
      if (elapsed - reported < PROGRESS_EVERY_SECONDS) return;
      reported = elapsed;
      await progress(elapsed, seconds, `waiting for a message${filter}, ${elapsed}s of ${seconds}s`);
    });
    return messageRecord(await deadline.within((within) => fetchMessage(client, found.id, AbortSignal.any([within, signal]))), ...bodyOptions(input));
  },
});

const replayMessage = tool({
  name: 'replay_message',
  title: 'Replay a webhook',
  description:
    "Sends an inbound message again, to every connected listener (cli mode) or to the forward URL. With edits (body or set, headers) the server stores an edited copy instead, a new message of the same endpoint, and answers its message_id (replay_of: the original): wait_for_message or get_message see it. resign: the server signs the copy with the endpoint's secret, as the provider would; without it the copy goes without the original's signature headers.",
  readOnly: false,
  input: McpReplayMessageIn,
  async run(input, { client }) {
    const { message_id: id, ...rest } = input;
    const edits: InboundReplayIn = {
      ...(rest.body === undefined ? {} : { body: rest.body }),
      ...(rest.set === undefined ? {} : { set: rest.set }),
      ...(rest.headers === undefined ? {} : { headers: rest.headers }),
      ...(rest.resign === undefined ? {} : { resign: rest.resign }),
    };
    return (await client.inboundMessages.replay(id, Object.keys(edits).length === 0 ? undefined : edits)).data;
  },
});

const trigger = tool({
  name: 'trigger',
  title: 'Send a sample webhook',
  description:
    "Sends a realistic sample webhook of a provider (github push, stripe payment_intent.succeeded, …) to an inbound endpoint, signed by the server with the endpoint's stored secret as the provider signs, so verification and the app's own signature check run for real; set edits its body first. Answers the new message_id. endpoint_id may be left out while hookrelay dev runs.",
  readOnly: false,
  input: McpTriggerIn,
  async run(input, { client, runningDev }) {
    const { endpoint_id: given, ...sample } = input;
    const endpointId =
      given ??
      requireRunningDevEndpoint(runningDev, input.provider, {
        message: 'trigger needs endpoint_id (only while hookrelay dev runs may it be left out)',
        hint: 'list_endpoints shows the inbound endpoints.',
      });
    const { data } = await client.inboundEndpoints.sample(endpointId, sample);
    // A server that predates `signed` always signed.
    return { ...data, signed: data.signed !== false, signed_by: data.signed === false ? 'none' : 'server' };
  },
});

const sendEvent = tool({
  name: 'send_event',
  title: 'Send an outbound event',
  description:
    'POST /v1/events: an event that hookrelay delivers, signed, to every outbound endpoint subscribed to its type (and owner_id, channels). Answers the event_id and one message_id per endpoint it went to; idempotency_key makes a repeat answer the first event.',
  readOnly: false,
  input: McpSendEventIn,
  async run(input, { client }) {
    const { idempotency_key: key, ...event } = input;
    return (await client.events.create(event, key === undefined ? {} : { idempotencyKey: key })).data;
  },
});

const pauseEndpoint = tool({
  name: 'pause_endpoint',
  title: 'Pause an inbound endpoint',
  description: 'Pauses an inbound endpoint: its ingest URL answers 503 (recorded as rejections) until resume_endpoint.',
  readOnly: false,
  destructive: true,
  input: McpEndpointIn,
  async run(input, { client }) {
    return (await client.inboundEndpoints.pause(input.endpoint_id)).data;
  },
});

const resumeEndpoint = tool({
  name: 'resume_endpoint',
  title: 'Resume an inbound endpoint',
  description: 'Resumes a paused inbound endpoint: its ingest URL takes webhooks again.',
  readOnly: false,
  input: McpEndpointIn,
  async run(input, { client }) {
    return (await client.inboundEndpoints.resume(input.endpoint_id)).data;
  },
});

/** Every tool, the reads first. */
export const MCP_TOOLS: readonly McpTool[] = [listEndpoints, listMessages, getMessage, listRejections, waitForMessage, replayMessage, trigger, sendEvent, pauseEndpoint, resumeEndpoint];

/** The tools `hookrelay mcp` offers: all, or only those that read. */
export function offeredTools(readOnly: boolean): McpTool[] {
  return MCP_TOOLS.filter((candidate) => candidate.readOnly || !readOnly);
}
