"""What a bot can use on this server (the Environment page): bots have no
network, so a zip runs with what is here. Read from this process's
interpreter and ``PATH``; the sandbox shows bots the same ``/usr``.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from functools import cache
from importlib import metadata
from typing import Any, Final

#: Programs looked for on ``PATH``, with the option that prints their version.
RUNTIMES: Final = (
    ("python3", "--version"),
    ("java", "-version"),
    ("node", "--version"),
    ("go", "version"),
    ("rustc", "--version"),
    ("cargo", "--version"),
    ("gcc", "--version"),
    ("g++", "--version"),
    ("clang", "--version"),
    ("dotnet", "--version"),
    ("ruby", "--version"),
    ("perl", "--version"),
    ("lua", "-v"),
    ("julia", "--version"),
    ("ghc", "--version"),
    ("Rscript", "--version"),
)
#: Seconds a runtime's version option may take.
VERSION_TIMEOUT: Final = 5.0


def _version_line(path: str, option: str) -> str:
    try:
        done = subprocess.run(
            [path, option],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    for line in (done.stdout + "\n" + done.stderr).splitlines():
        if line.strip():
            return line.strip()[:120]
    return ""


@cache
def environment() -> dict[str, Any]:
    """``{"python": version, "implementation", "machine": architecture
    (``x86_64``), "libc": [name, version] (``["glibc", "2.36"]``), "system",
    "packages": [{"name", "version"}] importable by the arena's Python,
    sorted by name, "runtimes": [{"name", "path", "version"}] found on PATH}``.
    Computed once per process (the runtimes' versions take a second)."""
    libc, libc_version = platform.libc_ver()
    packages: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and name.lower() not in packages:
            packages[name.lower()] = f"{name}\0{dist.version}"
    runtimes = []
    for name, option in RUNTIMES:
        path = shutil.which(name)
        if path is not None:
            runtimes.append({"name": name, "path": path, "version": _version_line(path, option)})
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "machine": platform.machine(),
        "libc": [libc or "unknown", libc_version],
        "system": f"{platform.system()} {platform.release()}",
        "packages": [
            {"name": text.split("\0")[0], "version": text.split("\0")[1]}
            for _, text in sorted(packages.items())
        ],
        "runtimes": runtimes,
    }
