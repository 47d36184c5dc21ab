"""transformers' ``{% generation %}`` … ``{% endgeneration %}`` tag (it marks the assistant's tokens for training
masks) as a Jinja2 extension: its body renders as if the tag were not there. Chat templates use it, Jinja2 does not
know it; both the template renderer and the parsers' reading of a template's thinking toggle need it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jinja2.ext
import jinja2.nodes


class Generation(jinja2.ext.Extension):
    """Parses ``{% generation %}`` blocks; renders their body unchanged."""

    tags = {"generation"}

    def parse(self, parser: Any) -> Any:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller: Callable[[], str]) -> str:
        return caller()
