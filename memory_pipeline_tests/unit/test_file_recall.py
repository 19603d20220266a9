"""Which memories concern a file the agent opened, and how they are shown in its tool result (pure rules;
the Elasticsearch query and the pi extension are tested end to end in e2e/test_file_recall.py)."""

from __future__ import annotations

from memory_pipeline.search.files import as_failure, components, concerns, file_names, for_file
from memory_pipeline.search.models import Row
from memory_pipeline.search.render import FILE_MARK, file_text

PROJECT = "/work/shop"
NAMES = file_names("/work/shop/src/ui/theme.ts", PROJECT)


def _row(id_: str, kind: str = "summary", knowledge: str = "", summary: str = "", **kw) -> Row:  # noqa: ANN003
    time, session, turn = kw.pop("time", "2026-03-01"), kw.pop("session", "s1"), kw.pop("turn", id_)
    return Row(
        id=id_,
        kind=kind,
        time=time,
        priority="high",
        summary=summary or id_,
        project=PROJECT,
        session_id=session,
        turn_id=turn,
        knowledge=knowledge,
        **kw,
    )


def test_a_file_is_named_by_its_path_in_the_project_and_each_shorter_tail() -> None:
    assert NAMES == ["src/ui/theme.ts", "ui/theme.ts", "theme.ts"]
    assert file_names("src/ui/theme.ts", PROJECT) == NAMES  # relative to the project already
    assert file_names("@src/ui/theme.ts") == NAMES  # pi's @-mention of a path
    assert file_names("/elsewhere/a/b/c/d/e/f.py", PROJECT) == ["c/d/e/f.py", "d/e/f.py", "e/f.py", "f.py"]
    assert file_names("../other/x.ts", PROJECT) == ["other/x.ts", "x.ts"]
    assert file_names("/", PROJECT) == [] and file_names("..") == []


def test_a_memory_concerns_the_file_only_by_a_name_that_ends_its_path() -> None:
    memory = _row("m1", knowledge="gotcha")
    assert concerns(memory, ["theme.ts"], NAMES)
    assert concerns(memory, ["./src/ui/theme.ts"], NAMES)
    assert not concerns(memory, ["lib/theme.ts"], NAMES)  # another file of the same name
    assert not concerns(memory, ["theme.tsx"], NAMES)
    assert not concerns(memory, [], NAMES)


def test_a_note_by_its_text_and_an_observation_only_by_its_failure() -> None:
    assert concerns(_row("n1", "note", summary="Never hand-edit ui/theme.ts: it is generated."), [], NAMES)
    assert not concerns(_row("n2", "note", summary="The colours live in theme.css."), [], NAMES)
    failed = "Asked: build it. Tools: bash. Files: src/app.ts. Failed: src/ui/theme.ts(3,1): error TS2304. Outcome: x"
    assert concerns(_row("o1", "observation", summary=failed), [], NAMES)
    # A turn that only read the file, and a failure that names another file, are not reminders about it.
    read_only = "Asked: show the theme. Tools: read. Files: src/ui/theme.ts. Outcome: it defines four colours."
    assert not concerns(_row("o2", "observation", summary=read_only), [], NAMES)
    other = "Asked: build. Files: src/ui/theme.ts. Failed: src/app.ts(1,1): error. Outcome: theme.ts looks fine"
    assert not concerns(_row("o3", "observation", summary=other), [], NAMES)


def test_the_most_useful_come_first_and_what_no_longer_holds_is_left_out() -> None:
    failure = "Asked: build. Failed: theme.ts: error TS2304. Outcome: fixed"
    rows = [
        (_row("fact", knowledge="fact", time="2026-03-05"), ["theme.ts"]),
        (_row("old-rule", knowledge="rule", time="2026-01-01"), ["theme.ts"]),
        (_row("new-rule", knowledge="rule", time="2026-02-01"), ["theme.ts"]),
        (_row("gotcha", knowledge="gotcha", time="2025-12-01", turn="t9"), ["src/ui/theme.ts"]),
        (_row("replaced", knowledge="decision", superseded_by="new-decision"), ["theme.ts"]),
        (_row("fail-learnt", "observation", summary=failure, turn="t9"), []),  # its turn's gotcha is shown
        (_row("fail", "observation", summary=failure, turn="t4"), []),
        (_row("elsewhere", knowledge="gotcha"), ["lib/theme.ts"]),
    ]
    assert [r.id for r in for_file(rows, NAMES, k=10)] == ["gotcha", "new-rule", "old-rule", "fact", "fail"]
    assert [r.id for r in for_file(rows, NAMES, k=2)] == ["gotcha", "new-rule"]
    assert for_file(rows, file_names("README.md"), k=10) == []


def test_a_component_is_named_by_the_folders_that_do_not_lay_the_tree_out() -> None:
    assert components(file_names("/work/shop/src/gates/GatesPanel.tsx", PROJECT)) == ["gates"]
    assert components(file_names("internal/alerts/alerts.go")) == ["alerts"]
    assert components(file_names("packages/billing/src/invoices/pdf.ts")) == ["invoices", "billing"]
    assert components(NAMES) == ["ui"] and components(file_names("src/lib/utils/x.ts")) == []  # layout only
    assert components(file_names("README.md")) == [] and components([]) == []


def test_a_standing_memory_about_the_component_follows_those_that_name_the_file() -> None:
    names = file_names("src/gates/GatesPanel.tsx")
    rows = [
        (_row("cents", knowledge="rule", summary="Amounts in gates are integer cents, never floats."), []),
        (_row("named", knowledge="fact", summary="GatesPanel.tsx renders the gate list."), ["GatesPanel.tsx"]),
        (_row("port", knowledge="fact", summary="The gates service listens on port 8123."), []),  # not standing
        (_row("other", knowledge="rule", summary="Amounts in berths are integer cents, never floats."), []),
        (_row("order", knowledge="rule", summary="Fix the gates test sources."), []),  # an order, not lasting
        (_row("old", knowledge="decision", summary="Gates uses moq.", superseded_by="new"), []),
        (_row("failed", "observation", summary="Asked: x. Failed: gates broke. Outcome: y"), []),
    ]
    assert [r.id for r in for_file(rows, names, k=10)] == ["named", "cents"]
    assert [r.id for r in for_file(rows, names, k=1)] == ["named"]
    assert for_file(rows, file_names("src/berths/BerthsPanel.tsx"), k=10)[0].id == "other"


def test_the_reminder_is_marked_whole_and_cites_ids() -> None:
    long = "Colour values in theme.ts must be rgb triples. " * 12
    text = file_text([_row("m1", knowledge="gotcha", summary=long), _row("o1", "observation", summary="x")], NAMES[0])
    header, *lines = text.splitlines()
    assert header.startswith(FILE_MARK.format(name="src/ui/theme.ts") + " ")
    assert lines[0].startswith("- gotcha m1 (2026-03-01): Colour values") and lines[1].startswith("- failure o1 ")
    assert lines[0].endswith("triples. […]") and len(lines[0]) < 360  # whole sentences, marked when cut
    assert file_text([], NAMES[0]) == ""


def test_an_observation_is_shown_from_the_failure_it_met_so_its_fix_fits_the_line() -> None:
    summary = (
        "Asked: the routes tests fail, can you look? Tools: bash. Failed: FAILED: permission denied: "
        "/var/cache/routes Outcome: Found it: the routes cache folder defaults to a system path. The fix: point "
        "`ROUTES_CACHE_DIR` at a folder under `.cache/` before running them; the suite passes now."
    )
    observed = _row("obs_1", kind="observation", summary=summary)
    assert "ROUTES_CACHE_DIR" not in observed.one_line  # whole, it is cut before the fix
    shown = as_failure(observed)
    assert shown.summary.startswith("Failed: FAILED: permission denied") and "ROUTES_CACHE_DIR" in shown.one_line
    assert "ROUTES_CACHE_DIR" in file_text([observed], "routes.go")
    quiet = _row("obs_2", kind="observation", summary="Asked: add a test Outcome: Added it.")
    rule = _row("m1", knowledge="rule", summary="Failed: is no prefix of a rule's text.")
    assert as_failure(quiet) == quiet and as_failure(rule) == rule
