"""Progress of long CLI work (maintenance, export, import): a bar on a terminal, log lines
elsewhere."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["ProgressBar", "LOG_INTERVAL_SECONDS"]

logger = logging.getLogger(__name__)

LOG_INTERVAL_SECONDS = 10.0
"""Off a terminal, the least time between two progress log lines of one step (its first and
last lines are always logged)."""


class ProgressBar:
    """A progress callback `(step, done, total)`: a bar on a terminal, log lines elsewhere.

    When `stream` (default stderr) is a terminal, one line is redrawn in place. When it is
    not (a pipe, a file, a CI log), nothing is written to it: progress is logged at INFO by
    this module's logger, when a step starts, when it completes, and in between at most every
    `interval` seconds (by `clock`), so a script's stderr holds its errors only. `total` may
    be None or 0 when the step's size is unknown.

    Example:
        >>> import io
        >>> class Terminal(io.StringIO):
        ...     def isatty(self):
        ...         return True
        >>> out = Terminal()
        >>> bar = ProgressBar(out, width=10)
        >>> for done in range(3):
        ...     bar("compact episodes", done, 2)
        >>> bar.close()
        >>> out.getvalue().split("\\r")[-1]
        'compact episodes [##########] 2/2\\n'
        >>> piped = io.StringIO()
        >>> ProgressBar(piped)("export", 1, 2)
        >>> piped.getvalue()
        ''
    """

    def __init__(self, stream: TextIO | None = None, *, width: int = 30,
                 interval: float = LOG_INTERVAL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.interval = interval
        self.clock = clock
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._step: str | None = None
        self._line = ""
        self._finished = False
        self._logged_at = 0.0

    def _render(self, step: str, done: int, total: int | None) -> str:
        if not total:
            return f"{step} {done}"
        filled = min(self.width, max(0, self.width * done // total))
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{step} [{bar}] {done}/{total}"

    def __call__(self, step: str, done: int, total: int | None) -> None:
        finished = bool(total) and done >= (total or 0)
        if self.tty:
            line = self._render(step, done, total)
            if step != self._step and self._step is not None:
                self.stream.write("\n")
            pad = " " * max(0, len(self._line) - len(line)) if step == self._step else ""
            self.stream.write("\r" + line + pad)
            self.stream.flush()
            self._line = line
        else:
            self._log(step, done, total, finished)
        self._finished = finished
        self._step = step

    def _log(self, step: str, done: int, total: int | None, finished: bool) -> None:
        """A progress log line when the step starts or completes, or `interval` after the
        last one."""
        now = self.clock()
        if (step != self._step or (finished and not self._finished)
                or (not finished and now - self._logged_at >= self.interval)):
            logger.info("%s: %s", step, f"{done}/{total}" if total else done)
            self._logged_at = now

    def close(self) -> None:
        """End the current line (on a terminal)."""
        if self.tty and self._step is not None:
            self.stream.write("\n")
            self.stream.flush()
        self._step = None
