"""The sans-IO PostgreSQL v3 codec: message framing, startup and authentication
(SCRAM-SHA-256, md5, trust), type OIDs, text and binary value codecs, COPY
formats and SQLSTATE errors.  No sockets and no SQL: it imports nothing else of
splitstream, so the server and the executor can both build on it."""
