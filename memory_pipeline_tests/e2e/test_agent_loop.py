"""The loop, end to end, with the real pi agent: a session states a rule and makes a decision, the pipeline
learns them, the next session in the same project starts with them (and can search the rest), and nothing of
it reaches another project or is learned a second time.

Real parts only: pi from npm (with Node 22 from npm), its model the local chat llama-server, the project's
extension, `memory-pipeline serve` and `memory-pipeline backfill` as subprocesses over the real Elasticsearch
and embedding server. The one concession to a 0.5B model: a session's first request may be prefilled with the
opening of a memory tool's call (see pi/first_tool_call.ts); the model writes the query or the note.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx

from memory_pipeline.settings import Settings
from memory_pipeline.stores.elasticsearch import make_client
from memory_pipeline.stores.indices import RAW_INDEX, RECALL_INDICES
from testkit.agent_loop import backfill_all
from testkit.pi_agent import entries, finished, session_of
from testkit.servers import free_port

RULE = "Rule for this project: always use pnpm, never npm."
DECISION = "We decided to use Vitest instead of Jest, because Jest kept breaking on our ESM imports."


def _memories_of(settings: Settings, session_id: str) -> list[dict]:
    with make_client(settings) as es:
        es.indices.refresh(index=list(RECALL_INDICES))
        hits = es.search(index=list(RECALL_INDICES), query={"term": {"session_id": session_id}}, size=1000)
    return [h["_source"] | {"_id": h["_id"]} for h in hits["hits"]["hits"]]


def test_the_next_session_starts_with_what_the_last_one_learned(loop, tmp_path: Path) -> None:  # noqa: ANN001
    settings, base, pi = loop
    project, other = tmp_path / "shop", tmp_path / "unrelated"

    # Session 1 in the project: a rule, then a decision with its reason.
    first = pi.run(project, RULE)
    assert finished(first), first.stderr
    assert finished(pi.run(project, DECISION, continue_session=True))
    session_1 = pi.last_session(project)
    session_1_id = session_of(session_1)["id"]
    backfill_all(settings)
    learned = _memories_of(settings, session_1_id)
    assert learned, "the pipeline learned nothing from session 1"
    # Knowledge, not quotes: the rule and the decision are memories of their own, readable alone.
    typed = {m.get("kind"): m for m in learned if m.get("kind") in ("rule", "decision")}
    # A string, not a list: pytest cuts a long list's repr in the middle, and the middle is what tells.
    assert set(typed) == {"rule", "decision"}, "\n".join(f"{m.get('kind')}: {m['summary']}" for m in learned)
    assert "pnpm" in typed["rule"]["summary"] and "Vitest" in typed["decision"]["summary"]
    assert not [m for m in learned if m["summary"].lower().startswith(("the user said", "rule for this project"))]
    # A natural question that names the category, not the tool, finds the rule first.
    asked = httpx.get(
        f"{base}/api/v1/search", params={"q": "which package manager do we use?", "project": str(project)}
    ).json()["data"]
    assert asked and asked[0]["id"] == typed["rule"]["_id"], asked[:3]
    # Promoted by a person through the service: MEMORY.md holds the whole rule, and so will the next briefing.
    review = httpx.get(f"{base}/api/v1/review", params={"project": str(project)}).json()
    [proposal] = [p for p in review["proposals"] if p["section"] == "Hard rules" and "pnpm" in p["text"]]
    token = {"X-Memory-Token": settings.service_token()}
    decided = httpx.post(
        f"{base}/api/v1/review", json={"project": str(project), "promote": [proposal["id"]]}, headers=token
    )
    assert decided.status_code == 200 and decided.json()["promoted"] == [proposal["id"]], decided.text
    memory_md = httpx.get(f"{base}/api/v1/review", params={"project": str(project)}).json()["memory"]
    assert typed["rule"]["summary"] in memory_md and "…" not in memory_md

    # Session 2 in the project starts with a briefing holding both, each with its id.
    second = pi.run(project, "Set up the test runner and install the dependencies.", nudge="memory_search")
    assert finished(second), second.stderr
    session_2 = pi.last_session(project)
    log = entries(session_2)
    [brief] = [e for e in log if e.get("customType") == "memory-briefing"]
    markdown, ids = brief["content"], brief["details"]["ids"]
    assert "pnpm" in markdown.lower() and "vitest" in markdown.lower()
    rules = markdown.split("### Rules of this project (MEMORY.md)")[1].split("###")[0]
    assert typed["rule"]["summary"] in rules and proposal["id"] in ids  # the promoted rule, whole, cited
    assert ids and all(f"`{i}`" in markdown for i in ids)
    cited = httpx.get(f"{base}/api/v1/memories", params={"ids": ids}).json()["data"]
    # every memory id resolves, to session 1's turns or to an earlier attempt at session 2 (pi is run again when
    # the small model garbles its call: `PiAgent.run`), never to session 2 itself (the rule's id is its
    # proposal's, in MEMORY.md)
    earlier = {session_of(f)["id"] for f in pi.session_files(project)} - {session_of(session_2)["id"]}
    assert session_1_id in {m["session_id"] for m in cited} <= earlier, [(m["session_id"], m["summary"]) for m in cited]
    first_prompt = next(i for i, e in enumerate(log) if e.get("message", {}).get("role") == "user")
    assert log.index(brief) == first_prompt + 1  # injected with the first prompt, before any model reply

    # The model's memory_search call ran the extension's tool against the service: it returned session 1's turns.
    [result] = [
        e["message"] for e in log if e.get("message", {}).get("role") == "toolResult"
        and e["message"]["toolName"] == "memory_search"
    ]  # fmt: skip
    shown = result["content"][0]["text"]
    turn_ids = {m["turn_id"] for m in learned}
    found = [i for i in {m["_id"] for m in learned} if i in shown]
    assert found and not result.get("isError"), shown
    detail = httpx.get(f"{base}/api/v1/memories/{found[0]}").json()
    assert detail["session_id"] == session_1_id and detail["turn_id"] in turn_ids and detail["source_turn"]

    # The person's /memory command searches this project, and says where the service is.
    found_by_person = pi.command(project, "/memory vitest jest")
    assert any(i in found_by_person for i in {m["_id"] for m in learned}), found_by_person
    assert pi.command(project, "/memory") == f"memory service {base}: ok"

    # Session 2's file, ingested: the briefing is never learned as a memory again.
    backfill_all(settings)
    again = _memories_of(settings, session_of(session_2)["id"])
    assert again and not [m for m in again if "Memory from earlier sessions" in m["summary"]]
    # What the turn asked is the person's prompt alone (the model's reply may quote what it was told: its words).
    asked = [
        re.split(r" (?:Tools|Files|Failed|Outcome): ", m["summary"])[0]
        for m in again
        if m["summary"].startswith("Asked:")
    ]
    assert asked and not [a for a in asked if any(i in a for i in ids) or "pnpm" in a.lower()]
    with make_client(settings) as es:
        es.indices.refresh(index=RAW_INDEX)
        session_2_raw = es.search(
            index=RAW_INDEX, query={"term": {"session_id": session_of(session_2)["id"]}}, size=1000
        )["hits"]["hits"]
    # Its messages are indexed; the briefing (metadata, in no turn) is not among them.
    assert session_2_raw and not [
        h for h in session_2_raw if "Memory from earlier sessions" in (h["_source"].get("content") or "")
    ]

    # A session in another project sees none of it.
    elsewhere = pi.run(other, "Which package manager and test runner should I use?")
    assert finished(elsewhere), elsewhere.stderr
    session_q = pi.last_session(other)
    assert not [e for e in entries(session_q) if e.get("customType") == "memory-briefing"]
    assert httpx.get(f"{base}/api/v1/search", params={"q": "pnpm vitest", "project": str(other)}).json()["count"] == 0


def test_a_session_goes_on_quietly_when_the_service_is_down(loop, tmp_path: Path) -> None:  # noqa: ANN001
    _, _, pi = loop
    project = tmp_path / "offline"
    done = pi.run(project, "Say hello.", service_url=f"http://127.0.0.1:{free_port()}")
    assert finished(done), done.stderr
    notices = [line for line in done.stderr.splitlines() if line.startswith("memory:")]
    assert len(notices) == 1 and "unreachable" in notices[0] and "goes on without memory" in notices[0]
    log = entries(pi.last_session(project))
    assert not [e for e in log if e.get("customType") == "memory-briefing"]
    assert [e for e in log if e.get("message", {}).get("role") == "assistant"]  # the model still answered


def test_the_agent_keeps_a_note_cited_to_its_session_and_turn(loop, tmp_path: Path) -> None:  # noqa: ANN001
    settings, base, pi = loop
    project = tmp_path / "deploys"
    done = pi.run(project, "Remember this: deploys go through the staging cluster first.", nudge="memory_remember")
    assert finished(done), done.stderr
    session = pi.last_session(project)
    log = entries(session)
    [result] = [e["message"] for e in log if e.get("message", {}).get("toolName") == "memory_remember"]
    assert not result.get("isError") and result["content"][0]["text"].startswith("remembered as note-"), result
    note_id = result["content"][0]["text"].removeprefix("remembered as ").strip()
    note = httpx.get(f"{base}/api/v1/memories/{note_id}").json()
    prompt_entry = next(e for e in log if e.get("message", {}).get("role") == "user")
    assert note["kind"] == "note" and note["project"] == str(project) and note["author"] == "agent"
    assert (note["session_id"], note["turn_id"]) == (session_of(session)["id"], prompt_entry["id"])
    # The pipeline's runs never touch it: a backfill of the day keeps it, and the next session is briefed with it.
    backfill_all(settings)
    assert httpx.get(f"{base}/api/v1/memories/{note_id}").status_code == 200
    brief = httpx.get(f"{base}/api/v1/briefing", params={"prompt": "deploy", "project": str(project)}).json()
    assert note_id in brief["ids"]
