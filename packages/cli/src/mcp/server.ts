import type { Readable, Writable } from 'node:stream';
import { McpServer, type ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { toolFailure, toolSuccess } from './results.js';
import { offeredTools, type McpContext } from './tools.js';

/** What the SDK hands a tool's callback beside its input. */
type ToolExtra = Parameters<ToolCallback>[0];

/** What an agent is told of the server as a whole, at its start. */
const INSTRUCTIONS = `hookrelay receives webhooks at inbound endpoints and keeps every one with its exact headers and body, and the answers of the local app that hookrelay listen or hookrelay dev forwarded it to.
Start with list_endpoints; list_messages finds webhooks (by event type, by a text in a body or header), get_message shows one. To test a change: replay_message (with edits) or trigger a sample, then wait_for_message or get_message for the app's answer. Ids in one answer are what the next call takes. A failure answers {"error":{"code","message",...}} with the API's code.`;

export interface McpServerOptions {
  context: McpContext;
  /** Offer only the tools that read. */
  readOnly: boolean;
  version: string;
}

/** The MCP server of the CLI, each tool answering compact JSON, or a tool error with the failure's code. */
export function createMcpServer(options: McpServerOptions): McpServer {
  const server = new McpServer({ name: 'hookrelay', version: options.version }, { instructions: INSTRUCTIONS });
  for (const tool of offeredTools(options.readOnly)) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.input,
        annotations: { title: tool.title, readOnlyHint: tool.readOnly, destructiveHint: tool.destructive === true, openWorldHint: false },
      },
      async (input: unknown, extra: ToolExtra) => {
        const token = extra._meta?.progressToken;
        const progress = async (done: number, total: number, message: string): Promise<void> => {
          if (token === undefined) return;
          await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: done, total, message } });
        };
        try {
          return toolSuccess(await tool.run(input, options.context, { signal: extra.signal, progress }));
        } catch (error) {
          return toolFailure(error);
        }
      },
    );
  }
  return server;
}

export interface StdioOptions {
  input: Readable;
  output: Writable;
  /** Ends the server (a stop signal). */
  stop: AbortSignal;
}

/**
 * Serves `server` on the streams until the client closes its end of `input` (the stdio transport's
 * shutdown), or `stop`. Requests read before the end are still answered: a client may write its
 * requests and close at once (`hookrelay mcp < requests.jsonl`).
 */
export async function serveStdio(server: McpServer, streams: StdioOptions): Promise<void> {
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
  });
  const transport = new StdioServerTransport(streams.input, streams.output);
  // Both before connect, which starts reading: the first lines, or the end, may come at once.
  const inFlight = trackRequests(transport);
  let connected = false;
  let ended = false;
  const closeWhenDone = (): void => {
    if (connected && ended && inFlight.size === 0) void server.close();
  };
  inFlight.onSettled = closeWhenDone;
  const end = (): void => {
    ended = true;
    closeWhenDone();
  };
  streams.input.once('end', end);
  streams.input.once('close', end);
  await server.connect(transport);
  connected = true;
  closeWhenDone();
  if (streams.stop.aborted) void server.close();
  else streams.stop.addEventListener('abort', () => void server.close(), { once: true });
  await closed;
}

type Message = Parameters<NonNullable<StdioServerTransport['onmessage']>>[0];

/**
 * The ids of the requests read and not yet answered (or cancelled by the client); `onSettled` runs
 * after each one's answer is written. The SDK's connect keeps the transport's `onmessage` and calls
 * it first with every message, and sends through `send`.
 */
function trackRequests(transport: StdioServerTransport): Set<string | number> & { onSettled?: () => void } {
  const pending: Set<string | number> & { onSettled?: () => void } = new Set();
  transport.onmessage = (message: Message) => {
    if ('method' in message && 'id' in message) pending.add(message.id);
    if ('method' in message && message.method === 'notifications/cancelled') {
      const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if ((typeof id === 'string' || typeof id === 'number') && pending.delete(id)) queueMicrotask(() => pending.onSettled?.());
    }
  };
  const send = transport.send.bind(transport);
  transport.send = async (message: Message) => {
    await send(message);
    if (!('method' in message) && 'id' in message && message.id !== undefined && pending.delete(message.id)) pending.onSettled?.();
  };
  return pending;
}
