"""``ctxeval view``: open a report in the browser, or serve its folder on
loopback when there is no browser to open it (a container, an SSH session)."""

from __future__ import annotations

import functools
import http.server
import sys
import webbrowser
from pathlib import Path
from typing import Any
from urllib.parse import quote


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass  # one line per request would bury the URL


def has_browser() -> bool:
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def open_report(report: Path) -> bool:
    """Open ``report`` in the user's browser; False when none is at hand."""
    if not has_browser():
        return False
    return webbrowser.open(report.resolve().as_uri())


def serve(report: Path, *, open_browser: bool = False) -> int:
    """Serve the report's folder on 127.0.0.1 (a free port) until Ctrl-C;
    the URL is printed first, on a line of its own."""
    folder = report.resolve().parent
    handler = functools.partial(_QuietHandler, directory=str(folder))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        port = server.server_address[1]
        url = f"http://127.0.0.1:{port}/{quote(report.name)}"
        print(f"serving {folder} at {url}", flush=True)
        print("press Ctrl-C to stop", flush=True)
        if open_browser and has_browser():
            webbrowser.open(url)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
    return 0
