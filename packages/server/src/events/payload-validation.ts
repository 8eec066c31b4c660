import { operationalEventType } from '@hookrelay/shared';
import { AppError } from '../errors.js';
import type { EventSchemas } from './event-schemas.js';
import type { EventTypeReads } from './type-reads.js';
import { describeFailure, type CompiledSchema, type SchemaFailure } from './schema-engine.js';

export type PayloadValidation = { ok: true } | { ok: false; failure: SchemaFailure; error: AppError };

const OK: PayloadValidation = { ok: true };

/**
 * Checks an event's payload against its type's schema in the project's catalogue (docs/api.md,
 * Event types). A payload passes unchecked when the event has no type, when the type is not in
 * the catalogue, or when it has no schema; an archived type's schema still applies. hookrelay's
 * own types are checked against their built-in schemas. A payload that does not match is the
 * returned `error`: 400 INVALID_REQUEST naming `field` (`body.payload`), the first failing JSON
 * pointer and the keyword that failed. `payload` is the value, or a function that reads it, called
 * only when the type has a schema (a JSON value is never a function): a body is parsed only to be
 * checked, and what the function throws is the caller's answer.
 */
export async function validateEventPayload(
  deps: { types: EventTypeReads; eventSchemas: EventSchemas },
  projectId: string,
  eventType: string | null | undefined,
  payload: unknown,
  field = 'body.payload',
): Promise<PayloadValidation> {
  if (eventType === null || eventType === undefined) return OK;
  const check = operationalEventType(eventType) ? await deps.eventSchemas.builtIn(eventType) : await catalogueCheck(deps, projectId, eventType);
  if (check === undefined) return OK;
  const failure = check(typeof payload === 'function' ? (payload as () => unknown)() : payload);
  if (failure === null) return OK;
  const message = `does not match the schema of event type ${JSON.stringify(eventType)} ${describeFailure(failure)}`;
  return { ok: false, failure, error: new AppError('INVALID_REQUEST', `${field}: ${message}`, { details: [{ path: field, message }] }) };
}

/** The compiled schema of the type's current revision; undefined when the type is not stored or has no schema. */
async function catalogueCheck(deps: { types: EventTypeReads; eventSchemas: EventSchemas }, projectId: string, name: string): Promise<CompiledSchema | undefined> {
  const cached = deps.eventSchemas.cached(projectId, name);
  const row = await deps.types.read({ projectId, name, compiledRevision: cached?.revision ?? null });
  if (row === undefined || !row.has_schema) {
    if (cached !== undefined) deps.eventSchemas.forget(projectId, name);
    return undefined;
  }
  if (cached !== undefined && cached.revision === row.revision) return cached.check;
  const check = await deps.eventSchemas.compileStored(projectId, name, row.payload_schema!);
  deps.eventSchemas.remember(projectId, name, row.revision, check);
  return check;
}
