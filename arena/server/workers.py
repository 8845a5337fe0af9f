"""The organiser's Dask workers (issue 29): their certificates, what each is
checked for when it joins, and the record of what became of each.

* **Certificates.** The competition has a certificate authority of its own,
  made at the first :func:`issue_certificate` in ``DIR/workers/`` (0700,
  the authority's key 0600, owner-only like the competition's key).
  ``hearts-arena serve DIR --worker-cert NAME OUT`` writes ``OUT/NAME.pem``
  and ``OUT/NAME.key`` (0600), a certificate and key for one machine, signed
  by that authority, and ``OUT/ca.pem``, the authority's certificate. The
  scheduler, each worker and the runner's client present one; Dask's TLS
  refuses a peer whose certificate the authority did not sign (mutual TLS).
  The runner's own is made beside the authority (:func:`runner_security`).
* **The join check** (:func:`admission_problem`, run on every worker by the
  plugin of :mod:`arena.server.dask_tables`, late joiners too): the same arena
  version (:func:`arena_version`) and package digest (:func:`package_digest`)
  as the server, the ``table`` resource declared, bots sealed there as the
  server seals them.
* **The record** (:func:`record_worker`, :func:`worker_lines`): every worker
  admitted, refused at its join, or flagged by the server's re-check, in the
  database's ``workers`` table, listed by ``serve --list``.

Imports ``cryptography`` (the ``[dask]`` extra) only when certificates are made.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from sqlalchemy import Connection, insert, select

from arena.protocol.codec import clean_text
from arena.sandbox.isolation import IsolationError
from arena.sandbox.launcher import Launcher, LaunchOptions
from arena.server import db
from arena.server.folder import CompetitionPaths, FolderError

#: The custom Dask worker resource a table task takes (one per table).
TABLE_RESOURCE: Final = "table"
#: ``DIR/workers/``: the competition's authority and the runner's certificate.
WORKERS_DIR: Final = "workers"
#: Days a certificate (and the authority) is valid.
VALID_DAYS: Final = 825
#: A certificate's name: a host name or a label (no path, no spaces).
NAME_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
#: The runner's own certificate's name in ``DIR/workers/``.
RUNNER_NAME: Final = "runner"


@functools.cache
def arena_version() -> str:
    """The installed hearts-arena's version (``importlib.metadata``), or
    ``"unknown"`` when it is not installed as a distribution."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hearts-arena")
    except PackageNotFoundError:
        return "unknown"


@functools.cache
def package_digest() -> str:
    """SHA-256 (hex) of the arena package as installed here: every file under
    the ``arena`` folder (compiled caches left out), by relative path in
    sorted order, each as ``path NUL size NUL bytes``. Two machines with the
    same digest run the same referee, rules and house bots."""
    import arena

    root = Path(arena.__file__).resolve().parent
    h = hashlib.sha256()
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    )
    for path in files:
        data = path.read_bytes()
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


@dataclass(frozen=True)
class Expected:
    """What every worker must match: the server's version and package digest,
    and the launch options its bots are started with (sealed as the server's)."""

    version: str
    digest: str
    options: LaunchOptions


def admission_problem(
    expected: Expected, version: str, digest: str, resources: Mapping[str, float]
) -> str | None:
    """The join check of one worker (run there), or ``None`` when it may play
    tables: ``version`` and ``digest`` are the worker's own
    (:func:`arena_version`, :func:`package_digest`), ``resources`` its
    declared Dask resources; sealing is tried with the server's launch
    options (:meth:`arena.sandbox.launcher.Launcher.check`)."""
    if version != expected.version:
        return f"arena version {version[:40]}, the server's is {expected.version[:40]}"
    if digest != expected.digest:
        return (
            f"arena package digest {digest[:12]}..., the server's is {expected.digest[:12]}...: "
            "install the server's exact package"
        )
    if resources.get(TABLE_RESOURCE, 0) < 1:
        return (
            f"it declares no {TABLE_RESOURCE!r} resource: start it with "
            f"'dask worker ... --resources {TABLE_RESOURCE}=N' (N: its cores)"
        )
    options = replace(expected.options, gate=None, cores=0)
    try:
        launcher = Launcher(options)
        try:
            launcher.check([])
            if expected.options.sandbox is True and not launcher.sealed:
                return "bots cannot be sealed there"
        finally:
            launcher.close()
    except IsolationError as exc:
        return f"bots cannot be started there as the server starts them: {exc}"
    return None


# -- certificates ----------------------------------------------------------------


def _check_name(name: str) -> None:
    if not NAME_PATTERN.match(name):
        raise FolderError(
            f"--worker-cert NAME: {clean_text(name, 70)!r} is not a host name or label "
            "(letters, digits, '.', '_', '-'; at most 63)"
        )


def _write_private(path: Path, data: bytes, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _authority(paths: CompetitionPaths) -> tuple[Any, Any]:
    """The competition's authority (certificate, key), made on first use."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = paths.root / WORKERS_DIR
    if not folder.is_dir():
        os.mkdir(folder, 0o700)
    os.chmod(folder, 0o700)
    cert_path, key_path = folder / "ca.pem", folder / "ca.key"
    if cert_path.exists() and key_path.exists():
        if key_path.stat().st_mode & 0o077:
            raise FolderError(f"{key_path} may be read by others: it must be owner-only (0600)")
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        return cert, key
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hearts-arena competition")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    _write_private(
        key_path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )
    _write_private(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return cert, key


def _issue(ca_cert: Any, ca_key: Any, name: str) -> tuple[bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    alt: list[x509.GeneralName]
    try:
        alt = [x509.IPAddress(ipaddress.ip_address(name))]
    except ValueError:
        alt = [x509.DNSName(name)]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@dataclass(frozen=True)
class IssuedCertificate:
    """The files :func:`issue_certificate` wrote (``ca``: the authority's certificate)."""

    cert: Path
    key: Path
    ca: Path


def issue_certificate(paths: CompetitionPaths, name: str, out: Path) -> IssuedCertificate:
    """``serve DIR --worker-cert NAME OUT``: a certificate and key for the
    machine ``name`` signed by the competition's authority (made on first
    use in ``DIR/workers/``), written to ``OUT/NAME.pem`` and ``OUT/NAME.key``
    (0600, new files), with the authority's certificate ``OUT/ca.pem``.

    Raises:
        FolderError: a bad name, ``OUT`` not a folder, a file that exists,
            an authority key others may read (one line).
    """
    _check_name(name)
    if not out.is_dir():
        raise FolderError(f"--worker-cert OUT: {out} is not a folder")
    cert_path, key_path, ca_path = out / f"{name}.pem", out / f"{name}.key", out / "ca.pem"
    for p in (cert_path, key_path):
        if p.exists():
            raise FolderError(f"{p} exists: remove it or write to another folder")
    from cryptography.hazmat.primitives import serialization

    ca_cert, ca_key = _authority(paths)
    cert_pem, key_pem = _issue(ca_cert, ca_key, name)
    _write_private(key_path, key_pem)
    _write_private(cert_path, cert_pem)
    ca_pem = ca_cert.public_bytes(serialization.Encoding.PEM)
    if not ca_path.exists() or ca_path.read_bytes() != ca_pem:
        tmp = out / f".ca-{os.getpid()}.pem"
        tmp.unlink(missing_ok=True)
        _write_private(tmp, ca_pem, 0o644)
        os.replace(tmp, ca_path)
    return IssuedCertificate(cert_path, key_path, ca_path)


def runner_security(paths: CompetitionPaths) -> Any:
    """The Dask ``Security`` of the runner's client to the organiser's
    scheduler: mutual TLS with the runner's own certificate from the
    competition's authority (made in ``DIR/workers/`` on first use),
    encryption required.

    Raises:
        FolderError: see :func:`issue_certificate`.
    """
    from distributed import Security

    folder = paths.root / WORKERS_DIR
    cert, key = folder / f"{RUNNER_NAME}.pem", folder / f"{RUNNER_NAME}.key"
    if not (cert.exists() and key.exists()):
        _authority(paths)
        cert.unlink(missing_ok=True)
        key.unlink(missing_ok=True)
        issue_certificate(paths, RUNNER_NAME, folder)
    return Security(  # type: ignore[no-untyped-call]
        tls_ca_file=str(folder / "ca.pem"),
        tls_client_cert=str(cert),
        tls_client_key=str(key),
        require_encryption=True,
    )


# -- the record --------------------------------------------------------------------


def record_worker(
    conn: Connection, address: str, name: str, status: str, reason: str | None, now: float
) -> None:
    """Store one event of a worker (``status`` in :data:`arena.server.db.WORKER_STATES`)."""
    if status not in db.WORKER_STATES:
        raise ValueError(f"unknown worker status {status!r}")
    conn.execute(
        insert(db.workers).values(
            address=clean_text(address, 250),
            name=clean_text(name, 250),
            status=status,
            reason=clean_text(reason, 300) if reason is not None else None,
            at=now,
        )
    )


def worker_events(conn: Connection, status: str | None = None) -> list[tuple[str, str, str, str]]:
    """Every worker event ``(address, name, status, reason)`` in order
    (only ``status``'s when given)."""
    q = select(db.workers).order_by(db.workers.c.id)
    if status is not None:
        q = q.where(db.workers.c.status == status)
    return [(r.address, r.name, r.status, r.reason or "") for r in conn.execute(q)]


def worker_lines(conn: Connection) -> list[str]:
    """``serve --list``'s lines of the workers refused at their join or
    flagged by the re-check (each retired), with the reason."""
    bad = [e for e in worker_events(conn) if e[2] in ("refused", "flagged")]
    lines = [f"{len(bad)} workers refused or flagged"]
    for address, name, status, reason in bad:
        lines.append(f"  {status} {clean_text(name, 80)} ({clean_text(address, 80)}): {reason}")
    return lines
