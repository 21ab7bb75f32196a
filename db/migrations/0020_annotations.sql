-- Annotations: free-form notes that people and automation attach to an object (a ticket, the
-- last RMA, who racked it), as Kubernetes' metadata.annotations. The cluster spec sets none, so
-- an apply never touches them; PATCH (or `loomctl annotate`) merges them, null removes a key.
-- At most 256 KiB of JSON per object (checked by the PATCH, as Kubernetes' limit).
ALTER TABLE sites ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE zones ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE rows ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE racks ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE hosts ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE gpus ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE storage_nodes ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE nics ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE switches ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE ports ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
ALTER TABLE links ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}';
