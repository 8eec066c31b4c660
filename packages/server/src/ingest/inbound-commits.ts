import type { CommittedMessages, IngestItem } from './batcher.js';

/** What takes the messages this process's ingestion has just committed: the stream hub of this process. */
export interface InboundCommitSink {
  wants(endpointId: string): boolean;
  /** What `publish` will send of a message, made while its commit is in flight (see `IngestBatcherOptions.renderCommitted`). */
  render(message: { id: string; item: IngestItem }): string;
  publish(commit: CommittedMessages): void;
}

/**
 * Connects this process's ingestion to its streams when the process has both roles, so a connected
 * CLI gets a new message straight from the commit instead of through NOTIFY → read-back. The NOTIFY
 * still goes out, for the streams of other processes.
 */
export class InboundCommitBus {
  private sink: InboundCommitSink | null = null;

  attach(sink: InboundCommitSink): () => void {
    this.sink = sink;
    return () => {
      if (this.sink === sink) this.sink = null;
    };
  }

  wants(endpointId: string): boolean {
    return this.sink?.wants(endpointId) ?? false;
  }

  render(message: { id: string; item: IngestItem }): string | undefined {
    return this.sink?.render(message);
  }

  publish(commit: CommittedMessages): void {
    this.sink?.publish(commit);
  }
}
