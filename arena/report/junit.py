"""JUnit XML, the test-report format CI systems display (GitLab, Jenkins,
GitHub Actions through a reporter, Azure Pipelines...).

One ``<testsuites>`` root holding one ``<testsuite>``; each :class:`Case` is a
``<testcase>`` with a ``<failure>`` or ``<skipped>`` child when it did not
pass. Times are in seconds. The widely accepted subset of the format is used
(the Ant/Surefire schema's elements and attributes), nothing vendor-specific.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Characters XML 1.0 cannot hold at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


@dataclass(frozen=True)
class Case:
    """One test case.

    Attributes:
        name: the case's name (a check, an entrant).
        classname: the group it belongs to, dotted (``hearts-arena.tools.check.passes``).
        time: seconds it took.
        failure: ``None`` if it passed, else a one-line message.
        details: the failure's longer text (or the output of a passing case).
        skipped: it did not run (``failure`` is then the reason, or ``None``).
    """

    name: str
    classname: str
    time: float = 0.0
    failure: str | None = None
    details: str = ""
    skipped: bool = False


def junit_xml(suite: str, cases: Sequence[Case], *, time: float | None = None) -> bytes:
    """The JUnit XML document of one suite, UTF-8 encoded.

    Args:
        suite: the suite's name.
        cases: its test cases, in order.
        time: the suite's duration in seconds (default: the cases' sum).
    """
    failures = sum(1 for c in cases if c.failure is not None and not c.skipped)
    skipped = sum(1 for c in cases if c.skipped)
    total = sum(c.time for c in cases) if time is None else time
    attrs = {
        "name": _clean(suite),
        "tests": str(len(cases)),
        "failures": str(failures),
        "errors": "0",
        "skipped": str(skipped),
        "time": f"{total:.3f}",
    }
    root = ET.Element("testsuites", attrs)
    ts = ET.SubElement(
        root,
        "testsuite",
        {**attrs, "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")},
    )
    for c in cases:
        tc = ET.SubElement(
            ts,
            "testcase",
            {"name": _clean(c.name), "classname": _clean(c.classname), "time": f"{c.time:.3f}"},
        )
        if c.skipped:
            el = ET.SubElement(tc, "skipped")
            if c.failure:
                el.set("message", _clean(c.failure))
        elif c.failure is not None:
            el = ET.SubElement(tc, "failure", {"message": _clean(c.failure), "type": "failure"})
            el.text = _clean(c.details or c.failure)
        elif c.details:
            ET.SubElement(tc, "system-out").text = _clean(c.details)
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document + b"\n"


def write_junit(
    path: Path, suite: str, cases: Sequence[Case], *, time: float | None = None
) -> None:
    """Write :func:`junit_xml` to ``path`` (atomically: a temporary file then
    a rename), creating its folder. The file is readable by everyone (0644):
    it holds verdicts only, for CI steps that may run as another user, even
    though a run writes its output folder owner-only.

    Raises:
        OSError: the file cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(junit_xml(suite, cases, time=time))
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
