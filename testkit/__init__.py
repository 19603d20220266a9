"""What the tests and the benchmarks share: the local servers, ingest helpers, the browser, the pi agent, the
corpus builders and the retrieval labels' scoring. Tests and benchmarks import this, never each other, and
nothing in `memory_pipeline` exists for them alone."""
