"""kiln's record format (docs/protocol.md, "Records"), written from Python.

One record per line, `TAG key=value ...`, every byte of a value outside
[A-Za-z0-9._/:@+,*()[]-] written %XX, as harness/common/protocol.c does.
"""
import os

PROTOCOL = 2            # KP_VERSION of harness/common/protocol.h
MAX_LINE = 65536        # KP_MAX_LINE
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                  b"0123456789._/:@+,*()[]-")


def escape(value):
    if isinstance(value, float):
        value = repr(value)
    data = str(value).encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in _SAFE else "%%%02X" % b for b in data)


def line(tag, **keys):
    """The record's line (with its newline); a record past the line limit
    becomes `truncated`, as the C encoder does."""
    text = tag + "".join(" %s=%s" % (k, escape(v)) for k, v in keys.items()
                         if v is not None) + "\n"
    if len(text) > MAX_LINE:
        text = "truncated tag=%s bytes=%d\n" % (tag, len(text))
    return text


class Sink:
    """Records to a file descriptor (the result pipe), whole lines."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, tag, **keys):
        data = line(tag, **keys).encode("ascii")
        while data:
            try:
                n = os.write(self.fd, data)
            except InterruptedError:
                continue
            data = data[n:]


def _id_char(s, i):
    """Length of the valid UTF-8 sequence at s[i:] that is no control
    character and no '%', or 0 (harness/common/select.c, id_char)."""
    b = s[i]
    if b < 0x80:
        return 1 if b >= 0x20 and b != 0x7F and b != 0x25 else 0
    k = 2 if b & 0xE0 == 0xC0 else 3 if b & 0xF0 == 0xE0 else 4 if b & 0xF8 == 0xF0 else 0
    if k == 0 or i + k > len(s):
        return 0
    c = b & (0x7F >> k)
    for x in s[i + 1:i + k]:
        if x & 0xC0 != 0x80:
            return 0
        c = (c << 6) | (x & 0x3F)
    if c < (0, 0, 0x80, 0x800, 0x10000)[k] or c > 0x10FFFF or 0xD800 <= c <= 0xDFFF or c <= 0x9F:
        return 0
    return k


def _id_escape(data):
    out, i = [], 0
    while i < len(data):
        k = _id_char(data, i)
        if k == 0:
            out.append("%%%02X" % data[i])
            i += 1
        else:
            out.append(data[i:i + k].decode("utf-8"))
            i += k
    return "".join(out)


def _id_unescape(text):
    """The bytes back from an id, or None where it is no escaped id
    (select.c, ksel_id_unescape: %HH with upper-case hex)."""
    raw, i = bytearray(), 0
    while i < len(text):
        if text[i] == "%":
            hh = text[i + 1:i + 3]
            if len(hh) != 2 or any(c not in "0123456789ABCDEF" for c in hh):
                return None
            raw.append(int(hh, 16))
            i += 3
        else:
            raw += text[i].encode("utf-8", "surrogateescape")
            i += 1
    return bytes(raw)


def kiln_id(name):
    """The id kiln's registry gives a node id: one already written as
    ksel_id_escape writes ids is kept, any other is escaped (control
    characters, bytes outside valid UTF-8 and '%' as %HH)."""
    raw = _id_unescape(name)
    if raw is not None and _id_escape(raw) == name:
        return name
    return _id_escape(name.encode("utf-8", "surrogateescape"))
