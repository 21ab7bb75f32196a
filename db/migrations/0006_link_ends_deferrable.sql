-- 0006: a link's port ends stay unique, but the check may wait until commit. PostgreSQL checks
-- a non-deferrable unique constraint row by row, so one apply that swaps two links' ends, or
-- moves a link onto a port freed by a link it deletes later in the same transaction, failed
-- with a duplicate key although the end state was valid. Apply defers these two checks
-- (SET CONSTRAINTS ... DEFERRED); every other writer still gets them immediately.
ALTER TABLE links
    DROP CONSTRAINT links_a_port_id_key,
    ADD CONSTRAINT links_a_port_id_key UNIQUE (a_port_id) DEFERRABLE INITIALLY IMMEDIATE,
    DROP CONSTRAINT links_b_port_id_key,
    ADD CONSTRAINT links_b_port_id_key UNIQUE (b_port_id) DEFERRABLE INITIALLY IMMEDIATE;
