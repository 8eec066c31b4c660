import type { Sql } from '../db/database.js';
import { findEventTypeSchemas, type EventTypeSchemaLookup, type EventTypeSchemaRow } from '../db/event-types.js';
import { GroupCommit } from '../lib/group-commit.js';

/**
 * The reads of event types that payload checks make (events/payload-validation.ts), shared by the
 * checks that arrive together, as a group commit shares a write (lib/group-commit.ts): a read starts
 * in the turn after the first check that needs it and takes every check queued by then, and a check
 * that arrives while one is in flight waits for the next. Every check still reads its type as it is
 * after the check began (docs/api.md, Checking a payload against its type), with one round trip for
 * the events of a moment instead of one each.
 */
export class EventTypeReads {
  private readonly reads: GroupCommit<EventTypeSchemaLookup, EventTypeSchemaRow | undefined>;

  constructor(sql: Sql) {
    this.reads = new GroupCommit({ commit: (lookups) => findEventTypeSchemas(sql, lookups), maxBatch: 500 });
  }

  /** The type's revision, and its schema unless the caller has compiled that revision; undefined when it is not stored. */
  read(lookup: EventTypeSchemaLookup): Promise<EventTypeSchemaRow | undefined> {
    return this.reads.enqueue(lookup);
  }
}
