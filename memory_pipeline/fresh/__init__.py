"""Fresh within seconds: a session's new turns searchable as soon as the agent tells the service a turn ended.

The pi extension posts the session file at each turn's end and at shutdown; the service runs that file's day
through the pipeline's own LLM-free assets (raw messages, turns, observations, embeddings: the run a backfill
without the chat model makes), recorded in the same Dagster instance. The day's full runs (sensor, schedule,
backfill) stay the record and add the LLM's memories: they find these files indexed and read them from the
parse cache, so nothing is ingested twice.
"""
