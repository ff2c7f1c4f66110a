"""A tiny progress bar on stderr for long CLI work (maintenance, export, import)."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["ProgressBar"]


class ProgressBar:
    """A progress callback `(step, done, total)` that draws one line on a stream.

    On a terminal the line is redrawn in place; elsewhere (logs, pipes) one line is written
    when a step starts and one when it completes, so logs stay short. `total` may be None or 0
    when the step's size is unknown.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> bar = ProgressBar(out, width=10)
        >>> for done in range(3):
        ...     bar("compact episodes", done, 2)
        >>> bar.close()
        >>> print(out.getvalue().strip())
        compact episodes [----------] 0/2
        compact episodes [##########] 2/2
    """

    def __init__(self, stream: TextIO | None = None, *, width: int = 30) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._step: str | None = None
        self._line = ""
        self._finished = False

    def _render(self, step: str, done: int, total: int | None) -> str:
        if not total:
            return f"{step} {done}"
        filled = min(self.width, max(0, self.width * done // total))
        bar = "#" * filled + "-" * (self.width - filled)
        return f"{step} [{bar}] {done}/{total}"

    def __call__(self, step: str, done: int, total: int | None) -> None:
        line = self._render(step, done, total)
        finished = bool(total) and done >= (total or 0)
        if self.tty:
            if step != self._step and self._step is not None:
                self.stream.write("\n")
            pad = " " * max(0, len(self._line) - len(line)) if step == self._step else ""
            self.stream.write("\r" + line + pad)
        elif step != self._step or (finished and not self._finished):
            self.stream.write(line + "\n")
        self.stream.flush()
        self._finished = finished
        self._step, self._line = step, line

    def close(self) -> None:
        """End the current line (on a terminal)."""
        if self.tty and self._step is not None:
            self.stream.write("\n")
            self.stream.flush()
        self._step = None
