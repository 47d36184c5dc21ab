"""Layout pieces shared by the rich sections."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from tokaudit.report.text import safe


def key_value(console: Console, key: str, value: str | Text, *, indent: int = 2, key_width: int = 11) -> None:
    """``  key         value`` with a hanging indent: on a narrow terminal the value wraps under
    itself, never back to column 0, and long words (paths) fold instead of being cut."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(min_width=key_width, no_wrap=True, style="bold")
    grid.add_column(overflow="fold")
    grid.add_row(key, value if isinstance(value, Text) else Text(safe(value)))
    console.print(Padding(grid, (0, 0, 0, indent), expand=False))
