"""Findings, reports, exit-code policy and renderers."""
