import { eventTypePathProblem, type EventTypeSource } from '@hookrelay/shared';
import { AppError } from '../errors.js';

function invalid(path: string, message: string): AppError {
  return new AppError('INVALID_REQUEST', `${path}: ${message}`, { details: [{ path, message }] });
}

/**
 * The event type settings a PATCH (pull or inbound endpoint) leaves behind, judged as a whole: a new
 * source keeps the stored path and a new path keeps the stored source, so each must suit the other.
 * `""` as the source clears both. Empty when the PATCH touches neither.
 */
export function eventTypePatch(
  body: { event_type_source?: EventTypeSource | '' | undefined; event_type_path?: string | undefined },
  stored: { event_type_source: EventTypeSource | null; event_type_path: string | null },
): { eventTypeSource?: EventTypeSource | null; eventTypePath?: string | null } {
  if (body.event_type_source === '') return { eventTypeSource: null, eventTypePath: null };
  if (body.event_type_source === undefined && body.event_type_path === undefined) return {};
  const source: EventTypeSource | null = body.event_type_source ?? stored.event_type_source;
  const path = body.event_type_path ?? stored.event_type_path;
  if (source === null) throw invalid('body.event_type_source', 'is required when event_type_path is set');
  if (path === null) throw invalid('body.event_type_path', 'is required when event_type_source is set');
  const problem = eventTypePathProblem(source, path);
  if (problem !== null) throw invalid('body.event_type_path', problem);
  return { eventTypeSource: source, eventTypePath: path };
}
