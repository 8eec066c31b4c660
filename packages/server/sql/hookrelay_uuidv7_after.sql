-- The UUIDv7 `p_n` steps after `p_id` (p_n ≥ 1): the low 48 bits of its random part plus p_n, or,
-- when that would overflow, the next millisecond with counter p_n. Always above p_id, growing with p_n.
CREATE OR REPLACE FUNCTION hookrelay_uuidv7_after(p_id uuid, p_n bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT AS $fn$
  SELECT CASE
    WHEN v.low + p_n < 281474976710656 THEN (left(v.t, 24) || lpad(to_hex(v.low + p_n), 12, '0'))::uuid
    ELSE (lpad(to_hex(v.ms + 1), 12, '0') || '7000' || '8000' || lpad(to_hex(p_n), 12, '0'))::uuid
  END
  FROM (SELECT p_id::text AS t,
               ('x' || right(p_id::text, 12))::bit(48)::bigint AS low,
               ('x' || left(replace(p_id::text, '-', ''), 12))::bit(48)::bigint AS ms) AS v;
$fn$;
