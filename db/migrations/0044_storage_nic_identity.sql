-- 0037's fill gave storage nodes' NICs the hca_type of their model, but the spec parser gives
-- them none (only hosts' backend and frontend NICs have an identity, nic_identity.hpp): on a
-- database that held storage nodes before 0037, the next apply of the same spec updated every
-- storage NIC (dev-small: 4, tests/db/nic_identity_migration_test.cpp). Put them back to what
-- apply writes. Only when there is something to change, so a database applied since keeps its
-- digests (the nics trigger fires per statement).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM nics WHERE network = 'storage' AND hca_type <> '') THEN
        UPDATE nics SET hca_type = '' WHERE network = 'storage' AND hca_type <> '';
    END IF;
END
$$;
