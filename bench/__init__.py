"""Benchmarks: `make bench` (or `uv run python -m bench [name ...]`); results land in bench/results.md."""
