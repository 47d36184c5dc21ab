"""Serving stacks' tool-call and reasoning parsers as data (:mod:`families`) and small grammars (:mod:`grammars`), and
what a stack's parsers make of one output, whole or streamed (:mod:`parse`). Imports nothing else of tokaudit."""
