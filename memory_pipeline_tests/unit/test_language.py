"""The language package: one tokenizer, one stop-word list, one lexicon, used by every package."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from memory_pipeline.language.lexicon import INTENTION, PLAN, is_question, kind_marked, lasting, replacement
from memory_pipeline.language.words import STOP_WORDS, content_words, tokens, words

PACKAGE = Path(__file__).resolve().parents[2] / "memory_pipeline"


def test_code_names_stay_one_word_and_cjk_characters_are_words() -> None:
    assert words("Run `uv run pytest -x` in src/app.py, not c++ (see #123).") == [
        "run", "uv", "run", "pytest", "x", "in", "src/app.py", "not", "c++", "see", "123",
    ]  # fmt: skip
    assert tokens("I don't know") == ["I", "don't", "know"]
    assert words("数据库锁定") == ["数", "据", "库", "锁", "定"]


def test_content_words_drop_function_words_and_speech_around_a_claim() -> None:
    assert content_words("The user said we should always use pnpm") == {"alway", "pnpm"}  # stems
    assert "don't" in STOP_WORDS and "pnpm" not in STOP_WORDS


@pytest.mark.parametrize(
    ("text", "chosen", "replaced"),
    [
        ("From now on local development uses Postgres instead of SQLite.", "Postgres", "SQLite"),
        ("We replaced moment with date-fns.", "date-fns", "moment"),
        ("Let's switch from Jest to Vitest for the unit tests", "Vitest", "Jest"),
        # what moves may stand between the verb and "from"
        ("we're moving the HTTP client in invoices from urllib3 to aiohttp, it leaked", "aiohttp", "urllib3"),
    ],
)
def test_a_replacement_names_what_is_chosen_and_what_it_replaces(text: str, chosen: str, replaced: str) -> None:
    found = replacement(text)
    assert found == (chosen, replaced)


def test_the_lexicon_marks_kinds_and_leaves_requests_alone() -> None:
    assert kind_marked("Always use pnpm, never npm.") == "rule"
    assert kind_marked("We decided to go with Vitest.") == "decision"
    assert kind_marked("The root cause was a stale lockfile.") == "gotcha"
    assert kind_marked("Read the README please.") is None
    # said by "we", a move is a choice; an order to move a file is for the moment
    assert kind_marked("We're moving the HTTP client in invoices from urllib3 to aiohttp.") == "decision"
    assert kind_marked("move the helper from utils.py to helpers.py") is None
    assert lasting("the build is broken") and not lasting("show me the file")


@pytest.mark.parametrize(
    ("sentence", "plan", "intention"),
    [
        ("Let me add a file watcher.", True, True),
        ("Now let's fix the footer.", True, True),
        ("I'll check the logs first.", True, True),
        ("Ill check the logs first.", False, True),  # typed without the apostrophe: an intention, no plan
        ("We need to add a retry.", False, True),
        ("To determine if the cache is stale, read its stamp.", False, True),
        ("Always use pnpm, never npm.", False, False),
        ("Letme think.", False, False),
    ],
)
def test_a_plan_is_one_kind_of_intention(sentence: str, plan: bool, intention: bool) -> None:
    # One list of openers: the narrow plan (what the assistant announces) inside the wider intention.
    assert bool(PLAN.match(sentence)) is plan
    assert bool(INTENTION.match(sentence)) is intention


def test_no_other_module_keeps_a_stop_word_list_or_a_kind_enum() -> None:
    """The language knowledge exists once: no module outside language/ defines a StrEnum named Kind or a
    constant whose name says stop words (STOP_WORDS itself is imported from there)."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "language":
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and node.name == "Kind":
                offenders.append(f"{path.name}: class Kind")
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and re.search(r"(?:^|_)STOP(?:_|$)", target.id.lstrip("_")):
                        offenders.append(f"{path.name}: {target.id}")
        # What a question is: `lexicon.is_question`, not a question mark tested here and there (it missed "？").
        offenders += [
            f"{path.name}: endswith a question mark" for _ in re.finditer(r"endswith\(\(?\"\?\"", path.read_text())
        ]
    assert offenders == []


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("Are we all committed?", True),
        ("你确定？", True),  # a full-width mark
        ("你还有什么可以优化模版的吗", True),  # a Chinese question without a mark, by its final particle
        ("你还有什么可以优化模版的吗.", True),  # as a memory's cleaned text ends it
        ("Which port does it use?)", True),
        ("你确定？.", True),  # a full-width mark, then the full stop a cleaned memory adds
        ("还没好呢", False),  # 呢 also ends statements ("not done yet")
        ("Always use pnpm, never npm.", False),
        ("heartbeat 用haiku 聊天用sonnet", False),
        ("我不是配置了api key吗 then we moved on.", False),  # the particle inside, not at the end
    ],
)
def test_a_question_is_known_by_its_end_in_every_script(text: str, asked: bool) -> None:
    assert is_question(text) is asked
