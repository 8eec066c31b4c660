-- The UUIDv7 p_n places after p_id (p_n ≥ 1) in the order of all UUIDv7s: the 74 bits after the
-- millisecond (rand_a, then rand_b under the variant bits) count as one counter, p_n is added to it,
-- and only its overflow carries into the millisecond. This is RFC 9562's monotonic random method
-- (section 6.2, method 2): the id stays in p_id's millisecond, as close above p_id as an id can be,
-- unless all 74 bits are used up. nextUuidv7After (src/ingest/ordered-id.ts) applies the same rule
-- once per step in the process; test/db/ordered-id.test.ts holds the two equal at the boundaries.
--
-- p_id's text is mmmmmmmm-mmmm-7aaa-Vbbb-bbbbbbbbbbbb (m the millisecond, a rand_a, V the variant
-- and rand_b's top bits, b the rest of rand_b). One expression with no FROM, so that PostgreSQL
-- inlines it into the calling statement instead of running a function call per id:
--   b = rand_b + p_n (below 2^63 for any p_n a batch uses), a = rand_a + (b >> 62),
--   the result: millisecond + (a >> 12), then a & 4095, then b's low 62 bits under the variant 10.
CREATE OR REPLACE FUNCTION hookrelay_uuidv7_after(p_id uuid, p_n bigint) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT AS $fn$
  SELECT (
    lpad(to_hex(('x' || substr(p_id::text, 1, 8) || substr(p_id::text, 10, 4))::bit(48)::bigint
                + ((('x' || substr(p_id::text, 16, 3))::bit(12)::bigint
                    + (((('x' || substr(p_id::text, 20, 4) || substr(p_id::text, 25, 12))::bit(64)::bigint & 4611686018427387903) + p_n) >> 62))
                   >> 12)), 12, '0')
    || '7'
    || lpad(to_hex((('x' || substr(p_id::text, 16, 3))::bit(12)::bigint
                    + (((('x' || substr(p_id::text, 20, 4) || substr(p_id::text, 25, 12))::bit(64)::bigint & 4611686018427387903) + p_n) >> 62))
                   & 4095), 3, '0')
    || to_hex((((('x' || substr(p_id::text, 20, 4) || substr(p_id::text, 25, 12))::bit(64)::bigint & 4611686018427387903) + p_n)
               & 4611686018427387903) | x'8000000000000000'::bigint)
  )::uuid
$fn$;
