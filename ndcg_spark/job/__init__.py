"""The nightly job: config, session, reading and writing tables, publishing, the stage sequence."""
