"""One way for a command to reach the memory: ask the running service over the same memory when there is one
(about 0.3 s), else search in-process (seconds to load the search). `search`, `briefing`, `recall` and `remember` all
go through `MemoryAccess`, so the CLI and the agents' hooks agree on which path a read takes.

Light to import: the standard library's HTTP client only; the search, pydantic and the stores are imported by
the in-process path when it runs (`memory-pipeline --help` and a search the service answers load none of them).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory_pipeline.service.client import DEGRADED_HEADER, ServiceRefused, ask, running_service, tell

if TYPE_CHECKING:
    from memory_pipeline.search.engine import MemorySearch
    from memory_pipeline.search.models import Row
    from memory_pipeline.search.remember import Note
    from memory_pipeline.settings import Settings
    from memory_pipeline.stores.moments import Moment, Recalled

# The filters every read takes (the service's query parameters, FilterParams' fields): project, since, until,
# priority, kind, agent.
FilterValues = dict[str, object]


@dataclass
class Found:
    """What a search printed: its text (JSON or the compact lines), and why the ranking fell back, if it did."""

    text: str
    degraded: str | None


@dataclass
class BriefingAnswer:
    """A briefing's markdown and ids, and what it could not read (the server that is down and what starts it),
    or a note on how it was cut."""

    markdown: str
    ids: list[str]
    said: str | None


class MemoryAccess:
    """The memory of `settings`, through its running service or in-process. A context manager: the in-process
    search, opened on first use, is closed on exit. `ServiceRefused` carries the service's reason."""

    def __init__(self, settings: Settings, *, ask_service: bool = True) -> None:
        self.settings = settings
        self._ask_service = ask_service
        self._base: str | None = None
        self._looked = False
        self._opened = ExitStack()
        self._engine: MemorySearch | None = None

    def __enter__(self) -> MemoryAccess:
        return self

    def __exit__(self, *exc: object) -> None:
        self._opened.close()

    @property
    def service(self) -> str | None:
        """The running service's base URL when it serves this memory (asked once), else None."""
        if self._ask_service and not self._looked:
            self._base, self._looked = running_service(self.settings.memory_id), True
        return self._base

    @property
    def engine(self) -> MemorySearch:
        """The search in-process (opened on first use)."""
        if self._engine is None:
            from memory_pipeline.search.open import open_search

            self._engine = self._opened.enter_context(open_search(self.settings))
        return self._engine

    def search(
        self, query: str, k: int, mode: str, filters: FilterValues, *, everything: bool = False, as_json: bool = False
    ) -> Found:
        """Layer 1 as the CLI prints it. JSON and the weak guesses (`everything`) are only in-process: the
        service's text is the compact lines of real matches."""
        base = None if as_json or everything else self.service
        if base:
            answer = ask(base, "/api/v1/search", {"q": query, "k": k, "mode": mode, "format": "text", **filters})
            degraded = answer.headers.get(DEGRADED_HEADER)
            # The service's text says it on its first line (for a model reading it); the CLI says it apart.
            text = answer.text.removeprefix(f"note: {degraded}\n") if degraded else answer.text
            return Found(text, degraded)
        from memory_pipeline.search.render import as_json as dumps
        from memory_pipeline.search.render import rows_text

        engine = self.engine
        rows = engine.find(query, k=k, filters=parse_filters(filters), mode=mode)
        text = dumps([r.to_dict() for r in rows]) if as_json else rows_text(rows, query=query, everything=everything)
        return Found(text, engine.degraded)

    def briefing(self, prompt: str, tokens: int, project: str | None, agent: str | None = None) -> BriefingAnswer:
        """What a new session should know first, for `project` (None: every project)."""
        base = self.service
        if base:
            params = {"prompt": prompt, "tokens": tokens, "project": project, "agent": agent}
            answer = ask(base, "/api/v1/briefing", params).json()
            return BriefingAnswer(answer["markdown"], answer["ids"], answer.get("degraded"))
        from memory_pipeline.search.briefing import build_briefing
        from memory_pipeline.search.open import briefing_note

        engine = self.engine
        workspace = self.settings.memory_workspace
        made = build_briefing(engine, prompt, token_budget=tokens, project=project, workspace=workspace, agent=agent)
        # The server that is down comes first: it is what the person must fix.
        return BriefingAnswer(made.markdown, made.ids, engine.degraded or briefing_note(made, self.settings))

    def recall(self, moment: Moment) -> Recalled:
        """What the session should be given at `moment` and was not yet (the injection ledger records it): from
        the running service, else in-process over the same ledger. `ServiceRefused`, OSError on the way."""
        from memory_pipeline.stores.moments import Recalled

        base = self.service
        if base:
            answer = tell(base, "/api/v1/recall", moment.model_dump(), self.settings.service_token())
            return Recalled.model_validate(answer)
        from memory_pipeline.search.moment import recall
        from memory_pipeline.search.open import briefing_note
        from memory_pipeline.stores.injections import open_ledger

        answer, made = recall(self.engine, open_ledger(self.settings), moment, self.settings.memory_workspace)
        return answer.model_copy(update={"degraded": briefing_note(made, self.settings)})

    def remember(self, note: Note) -> Row:
        """Keep `note` as it says (its author too). In-process even when a service runs: the service takes a
        write sent with its token for an agent's (medium at most), and a note from the command line is the
        person's."""
        from memory_pipeline.search.remember import remember
        from memory_pipeline.sessions.redact import Redactor
        from memory_pipeline.stores.memory_store import open_store

        with open_store(self.settings) as store:
            return remember(self.engine, store, note, Redactor.with_patterns(self.settings.redact_extra_patterns))

    def notify(self, session_file: str) -> str:
        """Tell the running service that a session file changed (its fast path ingests the day at once); what
        happened, in a line. Without a service the day's runs read it later."""
        base = self.service
        if not base:
            return "no memory service running; the day's runs will read the session"
        try:
            state = tell(base, "/api/v1/ingest", {"session_file": session_file}, self.settings.service_token())
        except (ServiceRefused, OSError) as exc:
            return str(exc)
        return f"{session_file}: day {state.get('day')} {state.get('state', 'queued')}"


def parse_filters(values: FilterValues):  # noqa: ANN201 - search.models.Filters, imported when needed
    """The search's filters from the values a command took (validated as the service validates them)."""
    from memory_pipeline.service.models import FilterParams

    return FilterParams.model_validate(values).filters()
