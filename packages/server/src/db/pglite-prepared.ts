import { parse, protocol, type PGlite } from '@electric-sql/pglite';

const { serialize } = protocol;

type Row = Record<string, unknown>;

/** SQLSTATE 0A000 with this message: the statement's result columns changed since it was prepared (DDL). */
const RESULT_TYPE_CHANGED = 'cached plan must not change result type';

interface Prepared {
  name: string;
  /** The parameter types PostgreSQL inferred at prepare time: how each value is serialised. */
  paramTypes: number[];
}

/**
 * Autocommit statements on PGlite as named prepared statements, as the `postgres` driver runs them
 * on PostgreSQL. PGlite's own `query()` parses, analyses and plans every statement anew (an unnamed
 * statement): for the store and answer statements of a webhook that is most of what PGlite spends
 * on it (BENCHMARKS.md, Listen latency and throughput). Here a statement's text is parsed once and
 * its plan cached by PostgreSQL's plan cache; each call sends Bind, Describe, Execute and Sync in
 * one message, under the same two locks PGlite's `query()` takes, and reads the answer with
 * PGlite's own parsers, so that rows, types and errors are those of `query()`. At most `capacity`
 * statements stay prepared (least recently used first out, closed on the server).
 *
 * Inside a transaction PGlite's transaction object runs the statements: it holds the lock this
 * takes.
 */
export class PGlitePreparedStatements {
  private readonly prepared = new Map<string, Prepared>();
  private sequence = 0;

  constructor(
    private readonly pglite: PGlite,
    private readonly capacity = 200,
  ) {}

  query(text: string, params: readonly unknown[]): Promise<Row[]> {
    return this.pglite._runExclusiveTransaction(() => this.pglite._runExclusiveQuery(() => this.run(text, params, true)));
  }

  private async run(text: string, params: readonly unknown[], retry: boolean): Promise<Row[]> {
    const statement = await this.statementFor(text);
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = this.pglite.serializers[statement.paramTypes[i]!];
      return serializer ? serializer(value) : String(value);
    });
    const message = concat([serialize.bind({ statement: statement.name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]);
    try {
      const { messages } = await this.pglite.execProtocol(message);
      return (parse.parseResults(messages, this.pglite.parsers)[0]?.rows ?? []) as Row[];
    } catch (error) {
      // A migration or a test changed a table the statement reads: prepare it again, once.
      if (retry && error instanceof Error && error.message.includes(RESULT_TYPE_CHANGED)) {
        await this.forget(text);
        return this.run(text, params, false);
      }
      throw error;
    }
  }

  private async statementFor(text: string): Promise<Prepared> {
    const known = this.prepared.get(text);
    if (known !== undefined) {
      // Most recently used last: the Map's order is the eviction order.
      this.prepared.delete(text);
      this.prepared.set(text, known);
      return known;
    }
    const name = `hookrelay_${++this.sequence}`;
    const { messages } = await this.pglite.execProtocol(concat([serialize.parse({ name, text }), serialize.describe({ type: 'S', name }), serialize.sync()]), {
      syncToFs: false,
    });
    const statement = { name, paramTypes: parse.parseDescribeStatementResults(messages) };
    this.prepared.set(text, statement);
    if (this.prepared.size > this.capacity) await this.forget(this.prepared.keys().next().value!);
    return statement;
  }

  private async forget(text: string): Promise<void> {
    const statement = this.prepared.get(text);
    if (statement === undefined) return;
    this.prepared.delete(text);
    await this.pglite.execProtocol(concat([serialize.close({ type: 'S', name: statement.name }), serialize.sync()]), { syncToFs: false });
  }
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
