"""The package people install: an sdist and a wheel built from this checkout (offline: ``python -m build
--no-isolation`` with the setuptools of the test environment), the wheel installed into a clean virtual
environment as pipx or ``uv tool install`` would, and its ``tokaudit`` command run on the Kimi fixture.

The clean environment gets tokaudit from the wheel only; its dependencies are the test environment's (a ``.pth``
line naming that site-packages: no network, no second download of tokenizers and friends).

The build runs on a copy of the checkout: setuptools writes ``tokaudit.egg-info/`` and ``build/`` beside the sources,
which other tests (run in parallel by pytest-xdist) would otherwise see change under them. The module's tests share
one build and run on one xdist worker (``xdist_group``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from tokaudit import __version__
from tokaudit.catalog import CATALOG

pytest.importorskip("build", reason="the test extras install build (pyproject.toml)")
pytestmark = pytest.mark.xdist_group("packaging")

#: What a checkout holds that is not source: environments, caches and earlier builds.
_NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".pytest_cache",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    source = tmp_path_factory.mktemp("checkout") / "tokaudit"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE, symlinks=True)
    # the sdist first, then the wheel built from the unpacked sdist: what PyPI users get is what is tested
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out


def test_sdist_holds_what_the_wheel_is_built_from(dist: Path) -> None:
    with tarfile.open(dist / f"tokaudit-{__version__}.tar.gz") as sdist:
        names = set(sdist.getnames())
    top = f"tokaudit-{__version__}"
    for needed in (
        "LICENSE",
        "CHANGELOG.md",
        "README.md",
        "setup.py",
        "pyproject.toml",
        "docs/rules/TA101.md",
        "docs/rules/README.md",
        "tokaudit/report/report.schema.json",
        "tokaudit/cli/app.py",
    ):
        assert f"{top}/{needed}" in names, needed


def test_wheel_metadata_and_data(dist: Path) -> None:
    with zipfile.ZipFile(dist / f"tokaudit-{__version__}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"tokaudit-{__version__}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"tokaudit-{__version__}.dist-info/entry_points.txt").decode()
    assert {f"tokaudit/rule_docs/{code}.md" for code in CATALOG} <= names  # copied from docs/rules by setup.py
    assert "tokaudit/report/report.schema.json" in names
    assert f"tokaudit-{__version__}.dist-info/licenses/LICENSE" in names
    assert f"Version: {__version__}" in metadata and "License-Expression: Apache-2.0" in metadata
    assert (
        "tokaudit = tokaudit.cli.app:main" in entry_points
        and "tokaudit-pre-commit = tokaudit.cli.precommit:main" in entry_points
    )


def test_wheel_installed_in_a_clean_venv_scans_the_kimi_fixture(dist: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    wheel = dist / f"tokaudit-{__version__}-py3-none-any.whl"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "test-environment-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKAUDIT_CACHE": "off", "COLUMNS": "80"}
    env.pop("PYTHONPATH", None)
    where = subprocess.run(
        [str(python), "-c", "import tokaudit; print(tokaudit.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert Path(where.stdout.strip()).is_relative_to(env_dir), where  # the installed copy, not this checkout

    scan = subprocess.run(
        [str(env_dir / "bin" / "tokaudit"), "scan", str(FIXTURES / "kimi-k2.5")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert scan.returncode == 1, scan.stderr
    assert scan.stdout.splitlines()[-1] == "✗ FAIL: 1 error, 8 warnings, 3 notes (1 at or above --fail-on error)"
    assert "  TA101 vocab-gap" in scan.stdout and scan.stderr == ""
    rule = subprocess.run(
        [str(env_dir / "bin" / "tokaudit"), "rule", "TA101"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert rule.returncode == 0 and rule.stdout == (ROOT / "docs" / "rules" / "TA101.md").read_text(encoding="utf-8")
    version = subprocess.run(
        [str(env_dir / "bin" / "tokaudit"), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert version.stdout.splitlines()[0] == f"tokaudit {__version__}"
