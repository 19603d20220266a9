"""The contract between the message frame, the `RawMessageDoc` model and the index mapping."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl

from memory_pipeline.sessions.discovery import scan_sessions
from memory_pipeline.sessions.load import catalog, load_messages
from memory_pipeline.sessions.messages import MESSAGE_SCHEMA
from memory_pipeline.sessions.redact import Redactor
from memory_pipeline.stores.indices import LEFT_FILE, RAW_DOC_FIELDS, RAW_MAPPINGS, RAW_MESSAGE_DOC
from memory_pipeline.stores.raw_store import checksum, message_documents
from testkit.paths import SESSION_FIXTURES


def test_every_document_of_every_fixture_validates_and_matches_the_mapping(tmp_path: Path) -> None:
    messages, _ = load_messages(catalog(scan_sessions(SESSION_FIXTURES)[0], {}), tmp_path, Redactor())
    documents = list(message_documents(messages))
    assert len(documents) == messages.filter(pl.col("doc_id").is_not_null()).height > 900
    mapped = set(RAW_MAPPINGS["properties"]) - {LEFT_FILE}  # set by the sync alone, when a message leaves its file
    for doc_id, session, body, digest in documents:
        parsed = RAW_MESSAGE_DOC.validate_json(body)  # raises on any field of the wrong type
        raw = json.loads(body)
        assert set(raw) == mapped, set(raw) ^ mapped
        assert parsed["doc_id"] == doc_id and parsed["session_id"] == session
        assert raw["doc_hash"] == digest and raw["doc_checksum"] == checksum(digest)
        unhashed = body.replace(f',"doc_hash":"{digest}","doc_checksum":{checksum(digest)}}}', "}")
        assert hashlib.sha1(unhashed.encode()).hexdigest() == digest
        assert raw["session_started_at"].endswith("Z") and "T" in raw["session_started_at"]


def test_document_fields_are_frame_columns() -> None:
    assert set(RAW_DOC_FIELDS) <= set(MESSAGE_SCHEMA)


def test_the_same_rows_give_the_same_hashes(tmp_path: Path) -> None:
    files = catalog(scan_sessions(SESSION_FIXTURES)[0], {})
    first = [d[3] for d in message_documents(load_messages(files, tmp_path / "a", Redactor())[0])]
    second = [d[3] for d in message_documents(load_messages(files, tmp_path / "b", Redactor())[0])]
    assert first == second
