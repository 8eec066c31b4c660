-- Why and since when an outbound endpoint is paused, and how its deliveries have gone since its
-- last success: what hookrelay pauses a failing endpoint by (docs/api.md, Endpoints that keep failing).

-- paused_reason: 'manual' (the API paused it) or 'failing' (hookrelay did); both null when not paused.
ALTER TABLE endpoints ADD COLUMN paused_reason text CHECK (paused_reason IN ('manual', 'failing'));
ALTER TABLE endpoints ADD COLUMN paused_at timestamptz;
-- An endpoint paused before these columns was paused through the API; when is not known, and its
-- last change is the nearest time there is.
UPDATE endpoints SET paused_reason = 'manual', paused_at = updated_at WHERE paused;
ALTER TABLE endpoints ADD CONSTRAINT endpoints_paused_reason
  CHECK ((paused_reason IS NOT NULL) = paused AND (paused_at IS NOT NULL) = paused);

-- Written by the statement that records delivery results, in the order results are recorded:
-- failing_since is the start of the first failed attempt after the last successful one (null when
-- the last attempt succeeded, or none has failed), failed_messages the messages that ended
-- failed_permanent since then. A success sets both back; so does a resume.
ALTER TABLE endpoints ADD COLUMN failing_since timestamptz;
ALTER TABLE endpoints ADD COLUMN failed_messages integer NOT NULL DEFAULT 0;
