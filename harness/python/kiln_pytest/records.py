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
