"""``scan``: the rules a run selects (``policy.py``), one target's scan (``run.py``), what it reports
(``summary.py`` builds the records of ``result.py``) and its rich view (``view.py``)."""
