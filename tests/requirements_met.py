"""Exits 0 when every line of a pip requirements file (argument 1) is
installed at a version it allows, with its dependencies (and its extras'),
transitively; 1 when one is not. test.sh then skips `pip install -r`,
whose resolver spends seconds of CPU (and more of waiting, on a loaded
machine) finding nothing to do. Any doubt, a missing `packaging`
included, means pip runs."""

import sys
from importlib.metadata import PackageNotFoundError, requires, version

from packaging.requirements import Requirement

checked = set()


def met(req, extra=""):
    if not (req.marker is None or req.marker.evaluate({"extra": extra})):
        return True
    try:
        have = version(req.name)
    except PackageNotFoundError:
        return False
    if not req.specifier.contains(have, prereleases=True):
        return False
    for e in ("",) + tuple(req.extras):
        key = (req.name.lower(), e)
        if key in checked:
            continue
        checked.add(key)
        for line in requires(req.name) or []:
            if not met(Requirement(line), e):
                return False
    return True


lines = (line.split("#")[0].strip() for line in open(sys.argv[1]))
sys.exit(0 if all(met(Requirement(line)) for line in lines if line) else 1)
