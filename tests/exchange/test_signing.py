"""Ed25519 keys, signatures and the trusted-keys file (crsbench.exchange.signing), checked against
the `cryptography` package's own verification."""

from __future__ import annotations

import base64
import stat

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from crsbench.core import CrsbenchError
from crsbench.exchange.signing import keygen, parse_public, sign, trusted_keys, verifies


def test_a_signature_verifies_with_the_public_key_file_and_nothing_else(tmp_path):
    private, public = keygen(tmp_path, "site-a")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    key, signature = sign(private, b"manifest bytes")
    raw = base64.b64decode(public.read_text().split()[1])
    Ed25519PublicKey.from_public_bytes(raw).verify(signature, b"manifest bytes")  # the library's own check
    with pytest.raises(InvalidSignature):
        Ed25519PublicKey.from_public_bytes(raw).verify(signature, b"manifest bytez")
    assert verifies(raw, signature, b"manifest bytes") and not verifies(raw, signature, b"other")
    assert key.raw == raw and trusted_keys(public) == {key.key_id: key}


def test_keys_are_never_overwritten_and_bad_key_files_are_named(tmp_path):
    keygen(tmp_path, "a")
    with pytest.raises(CrsbenchError, match="never overwritten"):
        keygen(tmp_path, "a")
    bad = tmp_path / "trusted.txt"
    bad.write_text("# comment\nssh-rsa AAAA x\n")
    with pytest.raises(CrsbenchError, match=r"trusted\.txt:2: expected 'ed25519"):
        trusted_keys(bad)
    with pytest.raises(CrsbenchError, match="32 bytes"):
        parse_public("ed25519 " + base64.b64encode(b"short").decode(), "here")
