"""Checks the signed provenance statement a released model file carries.

The gateway signs the statement as a C2SP signed note (https://c2sp.org/signed-note, Ed25519)
with the key that signs its audit-log checkpoints, and stores the note in the safetensors
metadata under `provenance`. A statement holds only for the parameters it names: their digest
(SHA-256 over the engine's canonical bytes) is recomputed here from the file's tensors, and
the file's study and round must be the statement's. Mirrors `ehds-gateway model verify`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

HEADER = "ehds-gateway model provenance v1"
METADATA_KEY = "provenance"
_ALG_ED25519 = 0x01
_SIG_PREFIX = "\u2014 "


class ProvenanceError(Exception):
    """The file's provenance does not hold (damaged, unsigned, signed by another key, or
    naming other parameters)."""


@dataclass(frozen=True)
class Provenance:
    """What the gateway vouches for about a released model."""

    study: str
    permit: str
    method: str
    round: int
    rounds: int
    selection: str
    dp: str
    epsilon: float
    delta: float
    contributors: list[str]
    samples: int | None
    digest: str
    audit_log_size: int
    audit_log_root: str
    released_at: str
    text: str


@dataclass(frozen=True)
class VerifierKey:
    """A note verifier key, `name+id+base64(0x01 || Ed25519 public key)`."""

    name: str
    key_id: int
    public: bytes

    @classmethod
    def parse(cls, text: str) -> "VerifierKey":
        parts = text.strip().split("+", 2)
        if len(parts) != 3:
            raise ProvenanceError("the verifier key is not name+id+key")
        name, hex_id, b64 = parts
        if not name or any(c.isspace() for c in name):
            raise ProvenanceError("the verifier key's name is malformed")
        if len(hex_id) != 8 or any(c not in "0123456789abcdef" for c in hex_id):
            raise ProvenanceError("the verifier key's ID is not 8 lowercase hex digits")
        try:
            raw = base64.b64decode(b64, validate=True)
        except ValueError as e:
            raise ProvenanceError("the verifier key is not base64") from e
        if len(raw) != 33 or raw[0] != _ALG_ED25519:
            raise ProvenanceError("the verifier key is not an Ed25519 key")
        key = cls(name, int(hex_id, 16), raw[1:])
        if key._computed_id() != key.key_id:
            raise ProvenanceError("the verifier key's ID does not match the key")
        return key

    def _computed_id(self) -> int:
        digest = hashlib.sha256(
            self.name.encode() + bytes([0x0A, _ALG_ED25519]) + self.public
        ).digest()
        return struct.unpack(">I", digest[:4])[0]


def open_note(note: str, key: VerifierKey) -> str:
    """The text of `note` if `key` signed it."""
    if any(c < " " and c != "\n" for c in note):
        raise ProvenanceError("control character in the note")
    split = note.rfind("\n\n")
    if split < 0 or not note.endswith("\n"):
        raise ProvenanceError("the note has no signature block")
    text = note[: split + 1]
    for line in note[split + 2 : -1].split("\n"):
        if not line.startswith(_SIG_PREFIX):
            raise ProvenanceError("malformed signature line")
        name, _, b64 = line[len(_SIG_PREFIX) :].partition(" ")
        try:
            raw = base64.b64decode(b64, validate=True)
        except ValueError:
            continue
        if name != key.name or len(raw) != 68 or struct.unpack(">I", raw[:4])[0] != key.key_id:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(key.public).verify(raw[4:], text.encode())
        except InvalidSignature as e:
            raise ProvenanceError("the provenance signature does not verify with this key") from e
        return text
    raise ProvenanceError("the provenance is not signed by this key")


def parse_statement(text: str) -> Provenance:
    lines = text.split("\n")
    if lines[0] != HEADER or lines[-1] != "":
        raise ProvenanceError(f"not a model provenance statement (`{HEADER}`)")
    fields: dict[str, str] = {}
    for line in lines[1:-1]:
        key, sep, value = line.partition(" ")
        if not sep or key in fields:
            raise ProvenanceError(f"malformed statement line `{line}`")
        fields[key] = value
    try:
        round_, of, rounds, selection = fields["round"].split(" ")
        dp, eps_word, epsilon, delta_word, delta = fields["dp"].split(" ")
        log_size, log_root = fields["audit-log"].split(" ")
        if of != "of" or eps_word != "epsilon" or delta_word != "delta":
            raise ValueError("round or dp line")
        contributors = fields["contributors"]
        samples = fields["samples"]
        return Provenance(
            study=fields["study"],
            permit=fields["permit"],
            method=fields["method"],
            round=int(round_),
            rounds=int(rounds),
            selection=selection,
            dp=dp,
            epsilon=float(epsilon),
            delta=float(delta),
            contributors=contributors.split(",") if contributors else [],
            samples=None if samples == "withheld" else int(samples),
            digest=fields["digest"],
            audit_log_size=int(log_size),
            audit_log_root=log_root,
            released_at=fields["released-at"],
            text=text,
        )
    except (KeyError, ValueError) as e:
        raise ProvenanceError(f"the signed text is not a provenance statement: {e}") from e


def read_safetensors(data: bytes) -> tuple[dict[str, str], str]:
    """The file's metadata and the hex SHA-256 of its parameters' canonical bytes: per tensor
    in name order, name length (u64 LE), name, rank (u64 LE), dims (u64 LE each), values (f32
    LE), as `fl_engine::ParameterSet::digest` computes it."""
    try:
        (header_len,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + header_len])
    except (struct.error, ValueError) as e:
        raise ProvenanceError("the parameter file is damaged: no safetensors header") from e
    body = data[8 + header_len :]
    metadata = header.pop("__metadata__", None) or {}
    h = hashlib.sha256()
    for name in sorted(header):
        t = header[name]
        begin, end = t["data_offsets"]
        shape = t["shape"]
        count = 1
        for d in shape:
            count *= d
        if t["dtype"] != "F32" or end - begin != 4 * count or end > len(body):
            raise ProvenanceError(f"the parameter file is damaged: tensor `{name}`")
        encoded = name.encode()
        h.update(struct.pack("<Q", len(encoded)) + encoded + struct.pack("<Q", len(shape)))
        h.update(b"".join(struct.pack("<Q", d) for d in shape))
        h.update(body[begin:end])
    return metadata, h.hexdigest()


def verify_model(data: bytes, verifier_key: str) -> Provenance:
    """The provenance of a released model file, if the gateway key `verifier_key` signed it
    and it names exactly these parameters, this study and this round."""
    key = VerifierKey.parse(verifier_key)
    metadata, digest = read_safetensors(data)
    note = metadata.get(METADATA_KEY)
    if note is None:
        raise ProvenanceError("the file carries no provenance statement")
    statement = parse_statement(open_note(note, key))
    if statement.digest != digest or metadata.get("digest") != digest:
        raise ProvenanceError("the file's parameters are not the ones the gateway signed")
    if statement.study != metadata.get("study"):
        raise ProvenanceError("the file's study is not the one the gateway signed")
    if str(statement.round) != metadata.get("round"):
        raise ProvenanceError("the file's round is not the one the gateway signed")
    return statement
