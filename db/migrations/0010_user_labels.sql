-- Labels set by people and automation (PATCH, `loomctl label`) live beside the spec's own:
-- `labels` is what the cluster spec sets (apply compares and writes it), `user_labels` what was
-- set by hand (apply never touches it). The API shows one `labels` map, the two merged (the
-- spec's value wins for a key both have); a PATCH of a key the spec owns is refused (409).
ALTER TABLE sites ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE zones ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE rows ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE racks ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE hosts ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE gpus ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE storage_nodes ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE nics ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE switches ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE ports ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
ALTER TABLE links ADD COLUMN user_labels jsonb NOT NULL DEFAULT '{}';
