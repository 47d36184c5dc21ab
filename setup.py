"""Only what pyproject.toml cannot say: the rule pages (docs/rules/TA*.md) go into the package as
``tokaudit/rule_docs/``, where ``tokaudit rule`` and the SARIF renderer read them in an installed copy
(a checkout reads docs/rules itself). Everything else is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithRulePages(build_py):
    """build_py, plus docs/rules/TA*.md copied to tokaudit/rule_docs/ in the build."""

    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "tokaudit" / "rule_docs"
        target.mkdir(parents=True, exist_ok=True)
        for page in sorted(Path(__file__).parent.joinpath("docs", "rules").glob("TA*.md")):
            self.copy_file(str(page), str(target / page.name))


setup(cmdclass={"build_py": BuildPyWithRulePages})
