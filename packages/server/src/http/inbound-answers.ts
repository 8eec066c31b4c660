import type { InboundAnswerOut } from '@hookrelay/shared';
import type { Sql } from '../db/database.js';
import { listInboundAnswers } from '../db/inbound-messages.js';
import { toDeletedInboundAnswerOut, toInboundAnswerOut } from '../views/inbound-answer.js';

/**
 * A message's answers, with what the app sent back, as GET /v1/inbound-messages/{id} shows them; of a
 * deleted message, without it (like its payload, it is unreachable at once and swept later).
 */
export async function loadInboundAnswers(sql: Sql, messageId: string, deleted = false): Promise<InboundAnswerOut[]> {
  if (deleted) return (await listInboundAnswers(sql, [messageId], false)).map(toDeletedInboundAnswerOut);
  return (await listInboundAnswers(sql, [messageId], true)).map(toInboundAnswerOut);
}
