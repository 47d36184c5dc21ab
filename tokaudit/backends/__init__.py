"""Encode/decode engines behind one protocol (see :mod:`tokaudit.backends.base`)."""
