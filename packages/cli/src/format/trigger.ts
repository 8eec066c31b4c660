import type { InboundSampleOut } from '@hookrelay/shared';
import type { Style } from './style.js';
import { formatTable } from './table.js';
import { terminalSafe } from './text.js';

/** What `trigger` returns: the ingest's outcome and who signed (the server's stored secret, or --secret). */
export type TriggerResult = InboundSampleOut & { signed_by: 'server' | 'cli' | 'none' };

export interface SampleListRow {
  provider: string;
  event: string;
  hmac_scheme: string;
  signature_header: string;
}

export function formatSampleList(rows: readonly SampleListRow[], style: Style): string {
  rows = terminalSafe(rows);
  return formatTable<SampleListRow>(
    [
      { header: 'PROVIDER', value: (row) => row.provider },
      { header: 'EVENT', value: (row) => row.event },
      { header: 'ENDPOINT VERIFIES WITH', value: (row) => `${row.hmac_scheme} (${row.signature_header})` },
    ],
    rows,
    style,
  );
}

export function formatSampleSent(result: TriggerResult, style: Style): string {
  result = terminalSafe(result);
  const signer =
    result.signed_by === 'server'
      ? "signed by the server with the endpoint's secret"
      : result.signed_by === 'cli'
        ? 'signed with --secret'
        : 'unsigned: the endpoint verifies nothing and has no secret to sign with';
  const stored = result.message_id === null ? 'stored' : `message ${style.bold(result.message_id)}`;
  const lines = [
    `${style.green('Sent')} ${result.provider} ${style.bold(result.event)} to inbound endpoint ${result.inbound_endpoint_id}${result.path === '/' ? '' : ` at ${result.path}`} (${signer})`,
    `  ingest answered ${result.ingest_status}: ${result.duplicate ? 'a duplicate of an earlier message (idempotency headers), nothing new stored' : stored}, ${result.size_bytes} bytes`,
  ];
  return lines.join('\n');
}
