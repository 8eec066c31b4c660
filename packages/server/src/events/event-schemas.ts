import { operationalEventType, type JsonSchemaObject } from '@hookrelay/shared';
import type { CompiledSchema, SchemaCompilation, SchemaEngine } from './schema-engine.js';

/** Compiled schemas kept per process; each is a few KiB, a large schema's a few hundred. */
export const COMPILED_SCHEMAS_KEPT = 1000;

/**
 * The event types' compiled schemas (docs/api.md, Event types), one per project, name and
 * revision: a type's revision goes up with every change, so an entry is never stale, and another
 * process's PATCH is seen at the next check. The least recently used entry goes first beyond
 * `maxEntries`. hookrelay's own types are compiled once and kept.
 */
export class EventSchemas {
  private engine: SchemaEngine | undefined;
  private readonly entries = new Map<string, { revision: number; check: CompiledSchema }>();
  private readonly builtIns = new Map<string, CompiledSchema>();

  constructor(private readonly maxEntries = COMPILED_SCHEMAS_KEPT) {}

  /** Compiles a schema without keeping it (a create or PATCH checks it before it is stored). */
  async compile(schema: JsonSchemaObject): Promise<SchemaCompilation> {
    if (this.engine === undefined) {
      const { SchemaEngine } = await import('./schema-engine.js');
      this.engine ??= new SchemaEngine();
    }
    return this.engine.compile(schema);
  }

  /**
   * A stored schema compiled again. Each compiled when it was stored, so one that no longer does
   * (a change of the rules between versions) is the server's fault, not the request's.
   */
  async compileStored(projectId: string, name: string, schema: JsonSchemaObject): Promise<CompiledSchema> {
    const compiled = await this.compile(schema);
    if (!compiled.ok) throw new Error(`the stored schema of event type ${name} (project ${projectId}) no longer compiles: ${compiled.problem}`);
    return compiled.check;
  }

  /** The compiled schema of that revision of the type, when this process has it. */
  cached(projectId: string, name: string): { revision: number; check: CompiledSchema } | undefined {
    const key = entryKey(projectId, name);
    const entry = this.entries.get(key);
    if (entry !== undefined) {
      // Map order is insertion order: taken out and put back, the entry is the most recent.
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  remember(projectId: string, name: string, revision: number, check: CompiledSchema): void {
    const key = entryKey(projectId, name);
    this.entries.delete(key);
    this.entries.set(key, { revision, check });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  forget(projectId: string, name: string): void {
    this.entries.delete(entryKey(projectId, name));
  }

  /** How many compiled schemas of the projects' types are kept. */
  get size(): number {
    return this.entries.size;
  }

  /** The compiled schema of one of hookrelay's own types; undefined for any other name. */
  async builtIn(name: string): Promise<CompiledSchema | undefined> {
    const kept = this.builtIns.get(name);
    if (kept !== undefined) return kept;
    const type = operationalEventType(name);
    if (type?.schema == null) return undefined;
    const compiled = await this.compile(type.schema);
    if (!compiled.ok) throw new Error(`the schema of ${name} does not compile: ${compiled.problem}`);
    this.builtIns.set(name, compiled.check);
    return compiled.check;
  }
}

/** Project ids are UUIDs, which hold no space. */
function entryKey(projectId: string, name: string): string {
  return `${projectId} ${name}`;
}
