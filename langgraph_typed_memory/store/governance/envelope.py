"""The encrypted envelope of an export file: scrypt key derivation, AES-256-GCM.

    magic "LGTMEXP\\0" | format version (1 byte) | header length (2 bytes, big endian) |
    header JSON (KDF parameters, salt, nonce) | ciphertext + 16-byte GCM tag

The whole prefix up to the ciphertext is the associated data, so changing any byte of the file
fails decryption. The plaintext is zlib-compressed first. The key is scrypt(passphrase, salt)
and is never written anywhere.

The header is read before it can be authenticated, so its scrypt parameters are checked
against what the reader accepts (`check_import_cost`) before any key is derived: a forged
header cannot make an import spend a gigabyte of memory and minutes of CPU to find out.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import unicodedata
import zlib
from typing import Any

from langgraph_typed_memory.errors import (
    ConfigurationError,
    ExportDecryptError,
    ExportFormatError,
    InvalidPassphrase,
)

__all__ = [
    "seal",
    "unseal",
    "passphrase_bytes",
    "check_cost",
    "check_import_cost",
    "check_max_scrypt_n",
    "FORMAT_VERSION",
    "DEFAULT_SCRYPT_N",
    "MAX_SCRYPT_N",
]

MAGIC = b"LGTMEXP\x00"
FORMAT_VERSION = 1
DEFAULT_SCRYPT_N = 2**15
"""scrypt cost of a new export (32 MiB of memory, about 0.1 s); lower only for tests."""
MIN_SCRYPT_N, MAX_SCRYPT_N = 2**10, 2**20
"""The scrypt costs an export may use; an import accepts up to `DEFAULT_SCRYPT_N` unless its
caller raises the limit (`max_scrypt_n`), never past `MAX_SCRYPT_N` (1 GiB of memory)."""
SCRYPT_R, SCRYPT_P = 8, 1
"""scrypt's block size and parallelism: every export writes these, every import requires them."""
SALT_BYTES, NONCE_BYTES, KEY_BYTES = 16, 12, 32
_PREFIX = struct.Struct(">8sBH")  # magic, format version, header length


def passphrase_bytes(passphrase: str | bytes) -> bytes:
    """The passphrase as bytes (NFC-normalized UTF-8); a typed error if empty or not text.

    Example:
        >>> passphrase_bytes("caf\u0065\u0301") == "caf\u00e9".encode()
        True
    """
    if isinstance(passphrase, str):
        raw = unicodedata.normalize("NFC", passphrase).encode("utf-8", "surrogatepass")
    elif isinstance(passphrase, bytes):
        raw = passphrase
    else:
        raise InvalidPassphrase(
            f"passphrase must be a str or bytes, got {type(passphrase).__name__}."
        )
    if not raw:
        raise InvalidPassphrase(
            "passphrase is empty: give a non-empty passphrase (a long one: it is the only "
            "secret protecting the export)."
        )
    return raw


def check_cost(n: Any, r: Any = SCRYPT_R, p: Any = SCRYPT_P) -> None:
    """Refuse scrypt parameters that are too weak, too costly, or malformed.

    Example:
        >>> check_cost(2**15)
        >>> check_cost(1000)
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: scrypt parameters n=1000, ...
    """
    ok = all(isinstance(x, int) and not isinstance(x, bool) for x in (n, r, p))
    if not ok or not (MIN_SCRYPT_N <= n <= MAX_SCRYPT_N and n & (n - 1) == 0
                      and 1 <= r <= 32 and 1 <= p <= 16 and 128 * n * r <= 2**30):
        raise ConfigurationError(
            f"scrypt parameters n={n!r}, r={r!r}, p={p!r} are out of range: n must be a power "
            f"of two in [{MIN_SCRYPT_N}, {MAX_SCRYPT_N}] (default {DEFAULT_SCRYPT_N}), "
            "1 <= r <= 32, 1 <= p <= 16, at most 1 GiB of memory."
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _cost(n: int, r: int = SCRYPT_R) -> str:
    """What deriving a key at cost `n` takes, in words."""
    return f"{128 * n * r // 2**20} MiB of memory, {n // DEFAULT_SCRYPT_N or 1}x the default time"


def check_max_scrypt_n(max_scrypt_n: Any) -> int:
    """The largest scrypt cost an import accepts: an int from 2**10 to 2**20.

    Example:
        >>> check_max_scrypt_n(2**16)
        65536
        >>> check_max_scrypt_n(2**21)
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ConfigurationError: max_scrypt_n=2097152 is out of ...
    """
    if not _is_int(max_scrypt_n) or not MIN_SCRYPT_N <= max_scrypt_n <= MAX_SCRYPT_N:
        raise ConfigurationError(
            f"max_scrypt_n={max_scrypt_n!r} is out of range: give an int from {MIN_SCRYPT_N} "
            f"to {MAX_SCRYPT_N} (default {DEFAULT_SCRYPT_N}, the cost export_scope writes by "
            "default)."
        )
    return int(max_scrypt_n)


def check_import_cost(n: int, r: int, p: int, max_scrypt_n: int = DEFAULT_SCRYPT_N) -> None:
    """Refuse an export header whose scrypt parameters this import does not accept.

    The header cannot be authenticated before the key is derived from it, so this runs
    first: `n` a power of two from 2**10 to `max_scrypt_n`, `r` = 8 and `p` = 1 (what every
    export writes).

    Raises:
        ExportFormatError: naming the parameter, and how to accept a costlier genuine file.

    Example:
        >>> check_import_cost(2**15, 8, 1)
        >>> check_import_cost(2**20, 8, 1)
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ExportFormatError: The export's header asks for scrypt ...
    """
    if (r, p) != (SCRYPT_R, SCRYPT_P):
        raise ExportFormatError(
            f"The export's header asks for scrypt r={r}, p={p}; every export is written with "
            f"r={SCRYPT_R}, p={SCRYPT_P} and an import accepts no other values, so the header "
            "was forged or written by another tool. Nothing was imported."
        )
    if not MIN_SCRYPT_N <= n <= MAX_SCRYPT_N or n & (n - 1):
        raise ExportFormatError(
            f"The export's header asks for scrypt n={n}, which no export uses (a power of two "
            f"from {MIN_SCRYPT_N} to {MAX_SCRYPT_N}): the header was forged or damaged. "
            "Nothing was imported."
        )
    if n > max_scrypt_n:
        raise ExportFormatError(
            f"The export's header asks for scrypt n={n} ({_cost(n)} to derive the key), above "
            f"this import's limit max_scrypt_n={max_scrypt_n}. A header is read before it can "
            "be authenticated, so a forged one could ask for anything: if you trust the file "
            f"and it was written with export_scope(..., scrypt_n={n}), import it with "
            f"max_scrypt_n={n} (at most {MAX_SCRYPT_N}). Nothing was imported."
        )


def _derive(passphrase: bytes, salt: bytes, n: int, r: int, p: int) -> bytes:
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

    return Scrypt(salt=salt, length=KEY_BYTES, n=n, r=r, p=p).derive(passphrase)


def seal(plaintext: bytes, passphrase: str | bytes, *, scrypt_n: int = DEFAULT_SCRYPT_N) -> bytes:
    """Compress and encrypt `plaintext` into an export envelope.

    Example:
        >>> blob = seal(b"hello", "correct horse")
        >>> blob[:7], unseal(blob, "correct horse")
        (b'LGTMEXP', b'hello')
    """
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    secret = passphrase_bytes(passphrase)
    check_cost(scrypt_n)
    salt, nonce = os.urandom(SALT_BYTES), os.urandom(NONCE_BYTES)
    header = json.dumps({
        "cipher": "AES-256-GCM", "compression": "zlib", "kdf": "scrypt",
        "n": scrypt_n, "r": SCRYPT_R, "p": SCRYPT_P,
        "salt": base64.b64encode(salt).decode(), "nonce": base64.b64encode(nonce).decode(),
    }, sort_keys=True, separators=(",", ":")).encode()
    aad = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(header)) + header
    key = _derive(secret, salt, scrypt_n, SCRYPT_R, SCRYPT_P)
    return aad + AESGCM(key).encrypt(nonce, zlib.compress(plaintext, 6), aad)


def unseal(blob: bytes, passphrase: str | bytes, *,
           max_scrypt_n: int = DEFAULT_SCRYPT_N) -> bytes:
    """Authenticate and decrypt an export envelope; the inverse of `seal`.

    The header's scrypt cost is checked (`check_import_cost`) before the key is derived;
    `max_scrypt_n` raises the accepted cost for a file written with a higher `scrypt_n`.

    Raises:
        ExportFormatError: not an export file, an unsupported format version, a bad header,
            or scrypt parameters above what this import accepts.
        ExportDecryptError: a wrong passphrase, or a file modified or truncated.
        ConfigurationError: `max_scrypt_n` out of range.

    Example:
        >>> blob = seal(b"hello", "pw")
        >>> unseal(blob[:-1], "pw")
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ExportDecryptError: The export could not be decrypted: ...
    """
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    secret = passphrase_bytes(passphrase)
    limit = check_max_scrypt_n(max_scrypt_n)
    if len(blob) < _PREFIX.size or not blob.startswith(MAGIC):
        raise ExportFormatError(
            "This is not a langgraph-typed-memory export (no 'LGTMEXP' magic bytes, or the "
            "file is shorter than its header): pass a file written by store.export_scope."
        )
    _, version, size = _PREFIX.unpack_from(blob)
    if version != FORMAT_VERSION:
        raise ExportFormatError(
            f"The export has format version {version}; this version of langgraph-typed-memory "
            f"reads version {FORMAT_VERSION}. Import it with the version that wrote it (or a "
            "newer one)."
        )
    end = _PREFIX.size + size
    try:
        if len(blob) < end:
            raise ValueError("truncated header")
        header = json.loads(blob[_PREFIX.size:end])
        salt, nonce = base64.b64decode(header["salt"]), base64.b64decode(header["nonce"])
        n, r, p = header["n"], header["r"], header["p"]
        if (header.get("kdf"), header.get("cipher"), header.get("compression")) != (
            "scrypt", "AES-256-GCM", "zlib") or len(salt) != SALT_BYTES or len(
                nonce) != NONCE_BYTES:
            raise ValueError("unknown algorithms or sizes")
        if not (_is_int(n) and _is_int(r) and _is_int(p)):
            raise ValueError("scrypt parameters that are not integers")
    except (ValueError, KeyError, TypeError) as exc:
        raise ExportFormatError(
            f"The export's header is damaged ({exc}); the file was modified or truncated. "
            "Use an intact copy of the export."
        ) from None
    check_import_cost(n, r, p, limit)  # before the key: the header is not authenticated yet
    key = _derive(secret, salt, n, r, p)
    try:
        compressed = AESGCM(key).decrypt(nonce, blob[end:], blob[:end])
    except InvalidTag:
        raise ExportDecryptError(
            "The export could not be decrypted: the passphrase is wrong, or the file was "
            "modified or truncated after it was written. Nothing was imported."
        ) from None
    return _inflate(compressed)


MAX_EXPANSION = 64
"""How many times its compressed size a payload may expand to (exports of JSON records
compress 5 to 15 times; a zlib bomb expands a thousandfold)."""
MIN_INFLATED = 64 * 2**20
"""Bytes any payload may expand to, whatever its compressed size."""


def _inflate(compressed: bytes) -> bytes:
    """The payload, refused when it would expand past `MAX_EXPANSION` times its size (or
    `MIN_INFLATED`): a decompression bomb costs no memory.

    Example:
        >>> _inflate(zlib.compress(b"abc"))
        b'abc'
        >>> _inflate(zlib.compress(b"0" * (2**27)))
        Traceback (most recent call last):
        ...
        langgraph_typed_memory.errors.ExportFormatError: The export's payload expands past ...
    """
    limit = max(MIN_INFLATED, MAX_EXPANSION * len(compressed))
    inflater = zlib.decompressobj()
    try:
        plaintext = inflater.decompress(compressed, limit)
    except zlib.error:
        raise ExportFormatError("The export's payload is not valid zlib data: the file was "
                                "not written by export_scope. Nothing was imported.") from None
    if inflater.unconsumed_tail:
        raise ExportFormatError(
            f"The export's payload expands past {limit:,} bytes ({MAX_EXPANSION} times its "
            "compressed size): not a file export_scope writes. Nothing was imported.")
    return plaintext
