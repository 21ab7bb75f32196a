-- 0009: find a switch's open events by the switches their location names. An event location is
-- a GPU, a switch, "<switch>/p<N>" (a port without a backend link) or a backend link
-- "<switch>/p<N>--<switch>/p<M>": the two expressions below are the switch of each end (or the
-- whole location when it has no '/' or '--'), so the `health` of 1,716 switches is two index
-- probes each instead of a scan of every open event (inventory_query.cpp, kSwitchHealthSql).
CREATE INDEX events_open_switch_a ON events (split_part(split_part(location, '--', 1), '/', 1))
    WHERE closed_at IS NULL;
CREATE INDEX events_open_switch_b ON events (split_part(split_part(location, '--', 2), '/', 1))
    WHERE closed_at IS NULL;
