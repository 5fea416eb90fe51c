"""linkseal.py - the sealed frames of the server1 <-> server2 link (docs/protocol.md, "Sealed
frames"), for the Python test peers: session keys from the link key and both nonces
(BLAKE2b-256, hashlib), ChaCha20-Poly1305 (IETF) from libsodium through ctypes (Python's
standard library has no AEAD; libsodium is installed for the servers anyway).
"""
import ctypes
import ctypes.util
import hashlib
import struct

_lib = ctypes.CDLL(ctypes.util.find_library("sodium") or "libsodium.so.23")
if _lib.sodium_init() < 0:
    raise RuntimeError("cannot initialise libsodium")
_ull = ctypes.c_ulonglong
TAG = 16
BODY_MIN, BODY_MAX = 20 + TAG, 660 + TAG  # one whole frame (header .. 640-byte payload) + tag


def enabled(key):
    """The all-zero key of --insecure-no-secret leaves the link in clear."""
    return key != bytes(32)


def session_key(key, label, nonce_c, nonce_s):
    return hashlib.blake2b(label + nonce_c + nonce_s, key=key, digest_size=32).digest()


def _nonce(seq):
    return bytes(4) + struct.pack("<Q", seq)


class Dir:
    """One direction of a connection: its key and the number of its next record."""

    def __init__(self, key):
        self.key = key
        self.seq = 0

    def seal(self, frame):
        """The record of one frame: 2-byte length, ciphertext, tag."""
        hdr = struct.pack(">H", len(frame) + TAG)
        out = ctypes.create_string_buffer(len(frame) + TAG)
        olen = _ull(0)
        _lib.crypto_aead_chacha20poly1305_ietf_encrypt(
            out, ctypes.byref(olen), frame, _ull(len(frame)), hdr, _ull(2), None,
            _nonce(self.seq), self.key)
        self.seq += 1
        return hdr + out.raw[:olen.value]

    def open(self, hdr, body):
        """The frame in one record (hdr: its 2 length bytes), or None if it does not open."""
        out = ctypes.create_string_buffer(max(len(body), 1))
        olen = _ull(0)
        if _lib.crypto_aead_chacha20poly1305_ietf_decrypt(
                out, ctypes.byref(olen), None, body, _ull(len(body)), hdr, _ull(2),
                _nonce(self.seq), self.key) != 0:
            return None
        self.seq += 1
        return out.raw[:olen.value]


def pair(key, nonce_c, nonce_s, client):
    """(tx, rx) of one side: client=True for server1's side."""
    c2s = Dir(session_key(key, b"seal c2s", nonce_c, nonce_s))
    s2c = Dir(session_key(key, b"seal s2c", nonce_c, nonce_s))
    return (c2s, s2c) if client else (s2c, c2s)


def split_frames(data):
    """Cuts a byte string of frames into frames by their length fields; a frame cut short or
    claiming more than there is stays one piece (it is sealed as it is)."""
    out = []
    while data:
        n = struct.unpack(">I", data[:4])[0] if len(data) >= 4 else 0
        end = 20 + n if len(data) >= 20 + n else len(data)
        out.append(data[:end])
        data = data[end:]
    return out
