"""Corrections people make to memories (edit, forget), kept apart from what the pipeline derives, applied to
every re-run, with an audit trail."""
