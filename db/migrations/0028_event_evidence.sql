-- 0028: what an event's evidence is (issue 39 item 1), so a restart, a reconnect or another
-- source cannot close it.
--
--   origin      what reported the condition: 'push' (POST /api/v1/telemetry), 'simulator', or
--               'scrape <exporter> <entity>'; '' for events stored before 0027 and for events
--               not raised by telemetry. Only a sample of the same kind of origin closes it.
--   down_ends   link_down: the ends that reported down, comma-separated ('nic' for the host end,
--               '<switch>/p<N>' for a switch port); a restarted loomd holds them down until they
--               report up, so the other end's sample does not close the link.
ALTER TABLE events
    ADD COLUMN origin text NOT NULL DEFAULT '',
    ADD COLUMN down_ends text NOT NULL DEFAULT '';
