"""The lab's own certificate authority and node certificates, for SSL listeners.

Made with the `openssl` command (the `cryptography` package is not a dependency): a
self-signed CA, then one key and certificate per node, signed by that CA, valid for
the node's address and `localhost`. A node gets a PEM key store file holding its
private key, its certificate and the CA's (`ssl.keystore.type=PEM`,
`ssl.keystore.location`); clients trust the CA file (`ssl.ca.location` in librdkafka,
`ssl.truststore.location` with `ssl.truststore.type=PEM` in Java).

Everything is written under the lab's run directory with private permissions; the keys
exist only to encrypt a lab's loopback traffic and are never reused.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import shutil
import subprocess
from pathlib import Path

CA_CERT = "ca.pem"
CA_KEY = "ca.key"
DAYS = 825
_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


class CertificateError(RuntimeError):
    """The certificates could not be made (no openssl, or it failed)."""


@dataclasses.dataclass(frozen=True)
class LabCa:
    directory: Path

    @property
    def cert(self) -> Path:
        return self.directory / CA_CERT

    @property
    def key(self) -> Path:
        return self.directory / CA_KEY


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise CertificateError("the openssl command is needed to make the lab's certificates")
    result = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True,
                            timeout=60, check=False)
    if result.returncode != 0:
        raise CertificateError(f"openssl {args[0]} failed: {result.stderr.strip()}")


def make_ca(directory: Path, name: str = "Brownout lab CA") -> LabCa:
    """A new self-signed CA in `directory` (kept if it is already there)."""
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    ca = LabCa(directory)
    if not (ca.cert.exists() and ca.key.exists()):
        _openssl("req", "-x509", *_KEY, "-keyout", CA_KEY, "-out", CA_CERT,
                 "-days", str(DAYS), "-subj", f"/CN={name}", cwd=directory)
    return ca


def node_keystore(ca: LabCa, name: str, hosts: list[str]) -> Path:
    """`<name>.pem`: the node's key, its certificate (signed by `ca`, valid for `hosts`)
    and the CA's certificate, as a PEM key store."""
    directory = ca.directory
    store = directory / f"{name}.pem"
    if store.exists():
        return store
    names = []
    for host in dict.fromkeys([*hosts, "localhost"]):
        try:
            ipaddress.ip_address(host)
            names.append(f"IP:{host}")
        except ValueError:
            names.append(f"DNS:{host}")
    ext = directory / f"{name}.ext"
    ext.write_text(f"subjectAltName={','.join(names)}\n"
                   "extendedKeyUsage=serverAuth,clientAuth\n")
    _openssl("req", *_KEY, "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={name}", cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", CA_CERT, "-CAkey", CA_KEY,
             "-CAcreateserial", "-out", f"{name}.crt", "-days", str(DAYS),
             "-extfile", ext.name, cwd=directory)
    key = (directory / f"{name}.key").read_text()
    cert = (directory / f"{name}.crt").read_text()
    fd = os.open(store, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key + cert + ca.cert.read_text())
    for leftover in (f"{name}.csr", f"{name}.ext", f"{name}.key", f"{name}.crt"):
        (directory / leftover).unlink(missing_ok=True)
    return store
