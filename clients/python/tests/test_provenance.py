"""The signed-note and key checks on hand-made notes (C2SP signed-note, Ed25519)."""

import base64
import hashlib
import struct

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ehds_sdk.provenance import ProvenanceError, VerifierKey, open_note

NAME = "gateway.example"


def keypair():
    private = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    public = private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    key_id = hashlib.sha256(NAME.encode() + b"\n\x01" + public).digest()[:4]
    vkey = f"{NAME}+{key_id.hex()}+{base64.b64encode(bytes([1]) + public).decode()}"
    return private, key_id, vkey


def sign(private, key_id, text: str) -> str:
    sig = base64.b64encode(key_id + private.sign(text.encode())).decode()
    return f"{text}\n\u2014 {NAME} {sig}\n"


def test_a_note_signed_by_the_key_opens_to_its_text():
    private, key_id, vkey = keypair()
    text = "ehds-gateway model provenance v1\nstudy x\n"
    assert open_note(sign(private, key_id, text), VerifierKey.parse(vkey)) == text


def test_an_edited_text_does_not_verify():
    private, key_id, vkey = keypair()
    note = sign(private, key_id, "round 3 of 3 last\n").replace("round 3", "round 2")
    with pytest.raises(ProvenanceError, match="does not verify"):
        open_note(note, VerifierKey.parse(vkey))


def test_a_key_whose_id_does_not_match_is_refused():
    _, key_id, vkey = keypair()
    name, _, b64 = vkey.split("+", 2)
    wrong = f"{(struct.unpack('>I', key_id)[0] ^ 1):08x}"
    with pytest.raises(ProvenanceError, match="ID does not match"):
        VerifierKey.parse(f"{name}+{wrong}+{b64}")


def test_a_note_without_a_signature_block_is_refused():
    _, _, vkey = keypair()
    with pytest.raises(ProvenanceError, match="no signature block"):
        open_note("just text\n", VerifierKey.parse(vkey))
