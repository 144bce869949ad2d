"""Production traces -> scenarios with the windows production sent.

``ctxeval import otel|openinference FILE -o DIR`` reads OTLP JSON traces,
rebuilds each conversation from its chat spans (``sessions``) and writes a
scenario per session plus ``<id>.windows.json``, the windows the
``recorded`` strategy replays."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..recorded_windows import windows_document
from ..scenario.importers._common import TranscriptError, read_text
from ..scenario.importers.writer import render_scenarios
from .calls import ChatCall, ReadStats
from .genai import read_genai_calls
from .openinference import read_openinference_calls
from .otlp import read_log_events, read_spans
from .redaction import Redactor
from .sessions import Built, build_drafts, rebuild

TRACE_FORMATS = ("langfuse", "langsmith", "openinference", "otel", "phoenix")


@dataclass
class TraceOptions:
    logs: Path | None = None
    # phoenix: the server, the project, and which spans.
    endpoint: str | None = None
    project: str | None = None
    since: str | None = None
    session: str | None = None
    session_key: str | None = None
    longer_than: int = 0
    redactor: Redactor = field(default_factory=Redactor)


@dataclass
class TraceImport:
    source: str
    stats: ReadStats
    built: Built
    files: dict[str, str]  # file name -> text, scenarios and their windows

    def summary(self) -> list[str]:
        b, s = self.built, self.stats
        lines = [
            f"{self.source}: read {s.spans} span(s), {s.chat_spans} chat span(s); "
            f"{b.sessions} session(s), {b.turns} turn(s), {b.tool_calls} tool call(s), "
            f"{b.recorded} window(s)"
        ]
        skipped: Counter[str] = Counter(s.skipped)
        skipped.update(b.skipped)
        for reason, n in skipped.most_common():
            lines.append(f"{self.source}: skipped {n} {reason}")
        return lines


def read_calls(
    fmt: str, path: Path | None, source: str, options: TraceOptions
) -> tuple[list[ChatCall], ReadStats]:
    if fmt == "phoenix":
        from .phoenix import fetch_spans

        if not options.endpoint or not options.project:
            raise TranscriptError(source, None, "phoenix needs --endpoint URL and --project NAME")
        spans = fetch_spans(
            options.endpoint, options.project, since=options.since, session=options.session
        )
    elif path is None:
        raise TranscriptError(source, None, f"{fmt} needs a traces FILE")
    elif fmt in ("langfuse", "langsmith"):
        from .exports import read_langfuse_calls, read_langsmith_calls

        if options.logs is not None:
            raise TranscriptError(source, None, f"--logs applies to otel only, not to {fmt}")
        reader = read_langfuse_calls if fmt == "langfuse" else read_langsmith_calls
        stats = ReadStats()
        calls = reader(read_text(path, source), source, options.session_key, stats)
        return _checked(calls, stats, fmt, source, options)
    else:
        spans = read_spans(read_text(path, source), source)
    stats = ReadStats(spans=len(spans))
    if fmt in ("openinference", "phoenix"):
        if options.logs is not None:
            raise TranscriptError(source, None, "--logs applies to otel only, not to openinference")
        calls = read_openinference_calls(spans, options.session_key, stats)
    else:
        logs = []
        if options.logs is not None:
            logs = read_log_events(read_text(options.logs, str(options.logs)), str(options.logs))
        calls = read_genai_calls(spans, logs, options.session_key, stats)
    return _checked(calls, stats, fmt, source, options)


def _checked(
    calls: list[ChatCall], stats: ReadStats, fmt: str, source: str, options: TraceOptions
) -> tuple[list[ChatCall], ReadStats]:
    """The calls, redacted; an error when none holds content."""
    if not calls:
        raise TranscriptError(
            source, None, f"no chat spans among its {stats.spans} span(s) (is this {fmt}?)"
        )
    if all(c.messages is None for c in calls):
        hint = (
            " and no --logs file was given (older GenAI instrumentations write messages only "
            "as log events)"
            if fmt == "otel" and options.logs is None
            else ""
        )
        raise TranscriptError(
            source,
            None,
            f"its {len(calls)} chat span(s) hold no message content{hint}: turn content "
            "capture on (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, OpenInference's "
            "OPENINFERENCE_HIDE_INPUTS off) and export again; no empty windows are written",
        )
    for call in calls:
        if call.messages is not None:
            call.messages = options.redactor.data(call.messages)
        call.output = options.redactor.data(call.output)
        call.tools = options.redactor.data(call.tools)
    return calls, stats


def import_traces(
    fmt: str, path: str | Path | None, options: TraceOptions, source: str | None = None
) -> TraceImport:
    shown = source or str(path)
    calls, stats = read_calls(fmt, Path(path) if path is not None else None, shown, options)
    built = build_drafts(rebuild(calls), shown, fmt, longer_than=options.longer_than)
    files = render_scenarios(built.drafts, shown)
    for index, draft in enumerate(built.drafts):
        scenario_id = draft.data["id"]
        document = windows_document(scenario_id, built.windows[index])
        files[f"{scenario_id}.windows.json"] = (
            json.dumps(document, indent=1, ensure_ascii=False) + "\n"
        )
    return TraceImport(shown, stats, built, files)


def write_files(files: dict[str, str], out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
        written.append(out / name)
    return written


__all__: Sequence[str] = (
    "TRACE_FORMATS",
    "TraceImport",
    "TraceOptions",
    "import_traces",
    "write_files",
)
