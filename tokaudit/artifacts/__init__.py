"""One parser per tokenizer file kind. Parsers know nothing of checks."""
