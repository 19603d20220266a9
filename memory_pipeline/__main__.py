"""`python -m memory_pipeline` is the `memory-pipeline` command."""

from memory_pipeline.cli import main

main()
