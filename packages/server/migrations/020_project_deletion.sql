-- `hookrelay-server projects delete`: a deleted project keeps its rows (messages, endpoints, keys),
-- as a deleted endpoint does, and frees its name for a new project.
ALTER TABLE projects ADD COLUMN deleted_at timestamptz;
DROP INDEX projects_name_key;
CREATE UNIQUE INDEX projects_name_key ON projects (name) WHERE deleted_at IS NULL;
