"""The README's examples run as written.

Every fenced block marked ```` ```python ```` (or ```` ```py ````) of README.md runs, in the
order of the file, in one fresh interpreter: like a reader pasting the blocks into one session,
a block may use the names an earlier block defined. Blocks written as an interactive session
(``>>>`` prompts) run their code lines. The interpreter starts in a temporary folder with
``MPLBACKEND=Agg``, so blocks that write files or draw leave nothing behind. That test is
marked ``slow`` (``tox -e slow``; CI runs it): it fits every example's models.

A block that needs something the test suite may lack is preceded, on the line just above its
fence, by one HTML comment (invisible on GitHub and PyPI):

* ``<!-- readme-test: needs dask -->``: an importable module (any name; several separated by
  spaces); the block is skipped when one is missing;
* ``<!-- readme-test: needs data cluto_docs/tr11.mat -->``: files under the data folder
  (``BREGCLUST_DATA``); skipped when missing, a failure under ``BREGCLUST_REQUIRE_DATA=1``.

Keep such blocks self-contained: a later block must not rely on a name only a skippable block
defines. Any other ``readme-test`` comment is an error, so a typo cannot silently skip a block.

The command lines of the README (``bregclust ...`` in plain code blocks) are checked too: each
``bregclust fit`` line must get past option checking (its options exist and apply to its
method), failing only on its example data files, which do not exist here.
"""

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys

import pytest
from conftest import REPO, data_home

README = REPO / "README.md"
_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_MARK = re.compile(r"<!--\s*readme-test:\s*(.*?)\s*-->\s*$")


def readme_blocks(text=None):
    """``[(language, first line number, code, needs)]`` for every fenced block of the README.

    ``needs`` is ``[]`` or the words of the ``readme-test: needs ...`` comment above the block.
    """
    text = README.read_text(encoding="utf-8") if text is None else text
    out = []
    for m in _FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        above = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        needs = []
        mark = _MARK.search(above)
        if mark:
            words = mark.group(1).split()
            if not words or words[0] != "needs" or len(words) < 2:
                raise ValueError(f"README.md line {line - 1}: unknown readme-test comment "
                                 f"{mark.group(0)!r}; write <!-- readme-test: needs NAME -->.")
            needs = words[1:]
        out.append((m.group(1).lower(), line + 1, m.group(2), needs))
    return out


def _as_code(block):
    """The code of a block; for an interactive session, the lines after the prompts."""
    lines = block.splitlines()
    if not any(ln.lstrip().startswith(">>>") for ln in lines):
        return block
    code = []
    for ln in lines:
        s = ln.lstrip()
        if s.startswith(">>> ") or s == ">>>":
            code.append(s[4:])
        elif s.startswith("... ") or s == "...":
            code.append(s[4:])
    return "\n".join(code) + "\n"


def _missing(needs):
    """What of ``needs`` is absent here (empty when the block can run)."""
    if not needs:
        return []
    if needs[0] == "data":
        home = data_home()
        return [p for p in needs[1:] if not (home / p).exists()] or ([] if len(needs) > 1
                                                                      else ["a data path"])
    return [m for m in needs if importlib.util.find_spec(m) is None]


_DRIVER = r"""
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
for b in blocks:
    if b["skip"]:
        continue
    try:
        exec(compile(b["code"], f"README.md block at line {b['line']}", "exec"), ns)
    except BaseException:
        print(f"README.md block at line {b['line']} failed:", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
    try:
        import matplotlib.pyplot as plt
        plt.close("all")
    except ImportError:
        pass
    print(f"ran block at line {b['line']}")
"""


@pytest.mark.slow  # fits every example's models in a fresh interpreter (several seconds)
def test_readme_python_blocks_run_as_written(tmp_path):
    blocks = [(line, _as_code(code), needs) for lang, line, code, needs in readme_blocks()
              if lang in ("python", "py", "pycon")]
    assert len(blocks) >= 4, "README.md should hold its python examples in ```python blocks"
    plan, skipped = [], []
    for line, code, needs in blocks:
        missing = _missing(needs)
        if missing and needs[0] == "data" and os.environ.get("BREGCLUST_REQUIRE_DATA") == "1":
            pytest.fail(f"README.md block at line {line} needs {missing} "
                        "(BREGCLUST_REQUIRE_DATA=1)")
        plan.append({"line": line, "code": code, "skip": bool(missing)})
        if missing:
            skipped.append(f"line {line} (needs {' '.join(missing)})")
    (tmp_path / "blocks.json").write_text(json.dumps(plan))
    (tmp_path / "driver.py").write_text(_DRIVER)
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    r = subprocess.run([sys.executable, "driver.py", "blocks.json"], cwd=tmp_path,
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    ran = r.stdout.count("ran block at line")
    assert ran == len(plan) - len(skipped), r.stdout
    if skipped:
        pytest.skip(f"ran {ran} README blocks; skipped {', '.join(skipped)}")


def test_readme_marks_are_read_and_unknown_marks_refused():
    text = ("<!-- readme-test: needs dask zarr -->\n```python\nx = 1\n```\n\n"
            "```python\ny = 2\n```\n")
    assert [(lang, line, needs) for lang, line, _, needs in readme_blocks(text)] == [
        ("python", 3, ["dask", "zarr"]), ("python", 7, [])]
    with pytest.raises(ValueError, match="unknown readme-test comment"):
        readme_blocks("<!-- readme-test: skip -->\n```python\nx = 1\n```\n")
    assert _as_code(">>> a = 1\n>>> for i in range(2):\n...     a += i\n3\n") == \
        "a = 1\nfor i in range(2):\n    a += i\n"
    assert _missing(["no_such_module_xyz"]) == ["no_such_module_xyz"]
    assert _missing(["json"]) == []


def _fit_lines():
    out = []
    for lang, line, code, _ in readme_blocks():
        if lang in ("", "bash", "console", "shell", "sh"):
            for i, ln in enumerate(code.splitlines()):
                cmd = ln.split("#", 1)[0].strip().lstrip("$ ").strip()
                if cmd.startswith("bregclust fit "):
                    out.append(pytest.param(cmd, id=f"line{line + i}"))
    return out


@pytest.mark.parametrize("cmd", _fit_lines())
def test_readme_command_lines_pass_option_checks(tmp_path, capsys, monkeypatch, cmd):
    from bregclust.cli import main

    monkeypatch.chdir(tmp_path)  # the example data files do not exist here
    try:
        code = main(shlex.split(cmd)[1:])
    except SystemExit as exc:  # an argparse error: an unknown option or a bad value
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and "data file not found" in err, err
