"""`python -m memory_pipeline.local.dagster_cli dev …`: Dagster's own command line, run after the package's
filter of Dagster's beta, preview and superseded notices is in place (importing this module imports the
package first), so `dagster dev` does not say it is superseded each time `make run` starts it."""

from dagster._cli import main

if __name__ == "__main__":
    main()
