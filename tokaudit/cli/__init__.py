"""The typer app. Modules here only parse options, call the core and pick a renderer."""
