"""Ed25519 keys for results bundles (docs/METHODS.md §22.2): a key pair on disk, a signature over
the manifest's bytes (which hold every part's digest), and the list of public keys a warehouse trusts.

Files: `<name>.key` holds the private key (PKCS#8 PEM, created with mode 0600), `<name>.pub` one
line `ed25519 <base64 raw public key> <name>`. A trusted-keys file holds such lines, one per key
('#' comments allowed). A key is named by its id: the first 16 hex digits of SHA-256 of the raw
public key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from crsbench.core import CrsbenchError


@dataclass(frozen=True)
class PublicKey:
    raw: bytes  # 32 bytes
    name: str = ""

    @property
    def key_id(self) -> str:
        return key_id(self.raw)

    def line(self) -> str:
        return f"ed25519 {base64.b64encode(self.raw).decode()} {self.name}".rstrip()


def key_id(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()[:16]


def keygen(folder: Path, name: str) -> tuple[Path, Path]:
    """Write `<name>.key` (private, mode 0600) and `<name>.pub` in `folder`; refuses to overwrite."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if not name or "/" in name or name.startswith("."):
        raise CrsbenchError(f"key name {name!r} is not a plain file name")
    folder.mkdir(parents=True, exist_ok=True)
    private, public = folder / f"{name}.key", folder / f"{name}.pub"
    for path in (private, public):
        if path.exists():
            raise CrsbenchError(f"{path} exists; keys are never overwritten (choose another --name)")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    public.write_text(PublicKey(raw, name).line() + "\n", encoding="utf-8")
    return private, public


def sign(private_key: Path, message: bytes) -> tuple[PublicKey, bytes]:
    """(the signer's public key, the Ed25519 signature of `message`) with the key in `private_key`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    try:
        key = serialization.load_pem_private_key(private_key.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise CrsbenchError(f"{private_key}: not a readable Ed25519 private key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise CrsbenchError(f"{private_key}: not an Ed25519 private key")
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return PublicKey(raw, private_key.stem), key.sign(message)


def verifies(public: bytes, signature: bytes, message: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def parse_public(line: str, where: str) -> PublicKey:
    """One `ed25519 <base64> [name]` line; `where` names the file and line in the error."""
    fields = line.split()
    if len(fields) < 2 or fields[0] != "ed25519":
        raise CrsbenchError(f"{where}: expected 'ed25519 <base64 public key> [name]', got {line.strip()!r}")
    try:
        raw = base64.b64decode(fields[1], validate=True)
    except binascii.Error as exc:
        raise CrsbenchError(f"{where}: the public key is not base64 ({exc})") from exc
    if len(raw) != 32:
        raise CrsbenchError(f"{where}: an Ed25519 public key has 32 bytes, got {len(raw)}")
    return PublicKey(raw, " ".join(fields[2:]))


def trusted_keys(path: Path) -> dict[str, PublicKey]:
    """key id -> key, from a trusted-keys file (a `.pub` file is one)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CrsbenchError(f"cannot read the trusted keys file {path}: {exc.strerror or exc}") from exc
    keys = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            key = parse_public(line, f"{path}:{number}")
            keys[key.key_id] = key
    return keys
