"""Every ``>>>`` example in the package's docstrings runs as a user would paste it: in a fresh
Python started in a directory outside the repository, against the built package (issue 57).
An example with an expected output must print it; one without must run without an error."""
import doctest
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import twinsim
import twinsim.api
import twinsim.plot

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _docstrings_with_examples():
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = []
    for module in (twinsim, twinsim.api, twinsim.plot):
        for test in finder.find(module):
            if test.examples and test.name not in {t.name for t in found}:
                found.append(test)
    return found


DOCSTRINGS = _docstrings_with_examples()

# Runs one docstring's examples in order in one namespace (seeded with `import twinsim`, as the
# examples assume); prints what doctest would compare and fails on the first difference.
RUNNER = textwrap.dedent('''
    import json, sys
    examples = json.loads(sys.stdin.read())
    namespace = {"twinsim": __import__("twinsim")}
    for source, want in examples:
        try:
            code = compile(source, "<example>", "eval")
        except SyntaxError:
            exec(compile(source, "<example>", "exec"), namespace)
            continue
        value = eval(code, namespace)
        if want.strip() and repr(value) != want.strip():
            sys.exit(f"{source.strip()}: got {value!r}, the docstring says {want.strip()}")
    print("ran", len(examples), "examples from", namespace["twinsim"].__file__)
''')


def test_the_package_has_examples():
    # the module's own (load_scenario, simulate), memory, serve, capacity and plot
    names = {t.name.rsplit(".", 1)[-1] for t in DOCSTRINGS}
    assert {"twinsim", "memory", "serve", "capacity", "plot"} <= names, names


@pytest.mark.parametrize("doc", DOCSTRINGS, ids=[t.name for t in DOCSTRINGS])
def test_docstring_example_runs_outside_the_repository(doc, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TWINSIM_SOURCE_DIR"}
    env["PYTHONPATH"] = os.pathsep.join(str(pathlib.Path(p).resolve())
                                        for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)
    env["MPLBACKEND"] = "Agg"
    import json

    examples = json.dumps([(e.source, e.want) for e in doc.examples])
    r = subprocess.run([sys.executable, "-c", RUNNER], input=examples, capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=240)
    assert r.returncode == 0, f"{doc.name}:\n{r.stdout}\n{r.stderr[-2000:]}"
    # the package came from the build, not from the repository's python/ folder
    assert str(ROOT / "python") not in r.stdout, r.stdout
    assert not (tmp_path / "scenarios").exists()
