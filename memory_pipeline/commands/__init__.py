"""The command line's commands, grouped by concern, and what they share; `memory_pipeline.cli` registers them."""
