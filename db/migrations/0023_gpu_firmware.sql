-- A GPU's firmware (VBIOS) version, as discovery or an operator reports it (PATCH
-- /api/v1/gpus/<name> {"firmware": "96.00.9F.00.04"}); '' until known. Operational: the cluster
-- spec does not set it and an apply never writes it. Described by one line in
-- inventory/include/loom/inventory/kinds.hpp, which is all the code a field needs (issue 10).
ALTER TABLE gpus ADD COLUMN firmware text NOT NULL DEFAULT '';
