// The ordered floor's store (bench/floor/relay.mjs FLOOR_MODE=ordered, bench/commit-parts.mjs): the
// least a store with hookrelay's guarantees does, in one statement and one synchronous commit. The
// endpoint's head row is bumped first: its row lock, held to commit, makes one endpoint's messages
// visible in sequence order from any number of processes (docs/architecture.md, Ordering). The
// message row holds what a CLI message carries and the body, keyed for listen pages by (endpoint,
// sequence). A batch (a group commit) takes a run of sequence numbers in the same statement.

/** Creates the two tables (once) and the head of `endpointId`. */
export async function createOrderedTables(sql, endpointId) {
  await sql`CREATE TABLE IF NOT EXISTS floor_heads (endpoint_id integer PRIMARY KEY, last_seq bigint NOT NULL)`;
  await sql`CREATE TABLE IF NOT EXISTS floor_ordered_messages (
    endpoint_id integer NOT NULL REFERENCES floor_heads (endpoint_id),
    seq bigint NOT NULL,
    received_at timestamptz NOT NULL,
    method text NOT NULL,
    path text NOT NULL,
    query text NOT NULL,
    content_type text NOT NULL,
    size_bytes integer NOT NULL,
    payload_sha256 text NOT NULL,
    raw_headers jsonb NOT NULL,
    body bytea NOT NULL,
    status text NOT NULL DEFAULT 'queued',
    response_status integer,
    response_latency_ms integer,
    PRIMARY KEY (endpoint_id, seq)
  )`;
  await sql`INSERT INTO floor_heads (endpoint_id, last_seq) VALUES (${endpointId}, 0) ON CONFLICT DO NOTHING`;
}

/**
 * Stores one message of `endpointId` (`message`: method, path, query, content_type, raw_headers,
 * payload_sha256) with its `body`; resolves to its sequence number once the commit is durable.
 */
export async function storeOrdered(sql, endpointId, message, body) {
  const [row] = await sql`
    WITH head AS (
      UPDATE floor_heads SET last_seq = last_seq + 1 WHERE endpoint_id = ${endpointId} RETURNING last_seq
    )
    INSERT INTO floor_ordered_messages
      (endpoint_id, seq, received_at, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, body)
    SELECT ${endpointId}, last_seq, now(), ${message.method}, ${message.path}, ${message.query}, ${message.content_type},
           ${body.length}, ${message.payload_sha256}, ${sql.json(message.raw_headers)}, ${body}
    FROM head
    RETURNING seq`;
  return Number(row.seq);
}

/**
 * Stores `messages` (as for `storeOrdered`, each with its `body`) in one statement; resolves to the
 * sequence number of each, in order, once the commit is durable.
 */
export async function storeOrderedBatch(sql, endpointId, messages) {
  if (messages.length === 1) return [await storeOrdered(sql, endpointId, messages[0], messages[0].body)];
  let offset = 0;
  const items = messages.map((m, i) => {
    const item = { i: i + 1, method: m.method, path: m.path, query: m.query, content_type: m.content_type, size_bytes: m.body.length, payload_sha256: m.payload_sha256, raw_headers: m.raw_headers, off: offset };
    offset += m.body.length;
    return item;
  });
  const n = messages.length;
  const rows = await sql`
    WITH head AS (
      UPDATE floor_heads SET last_seq = last_seq + ${n} WHERE endpoint_id = ${endpointId} RETURNING last_seq
    )
    INSERT INTO floor_ordered_messages
      (endpoint_id, seq, received_at, method, path, query, content_type, size_bytes, payload_sha256, raw_headers, body)
    SELECT ${endpointId}, head.last_seq - ${n} + m.i, now(), m.method, m.path, m.query, m.content_type, m.size_bytes, m.payload_sha256,
           m.raw_headers, substring(${Buffer.concat(messages.map((m) => m.body))}::bytea FROM m.off + 1 FOR m.size_bytes)
    FROM head, jsonb_to_recordset(${sql.json(items)}) AS m (i integer, method text, path text, query text, content_type text,
      size_bytes integer, payload_sha256 text, raw_headers jsonb, off integer)
    RETURNING seq`;
  return rows.map((row) => Number(row.seq)).sort((a, b) => a - b);
}

/** Records the app's answer to message `seq` (the client's result frame), in a commit of its own. */
export async function recordOrderedResult(sql, endpointId, seq, status, latencyMs) {
  await sql`
    UPDATE floor_ordered_messages
    SET status = ${status !== null && status >= 200 && status < 300 ? 'succeeded' : 'failed_permanent'},
        response_status = ${status}, response_latency_ms = ${latencyMs}
    WHERE endpoint_id = ${endpointId} AND seq = ${seq}`;
}
