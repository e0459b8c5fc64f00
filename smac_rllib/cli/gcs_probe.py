"""Does a Ray GCS answer at an address? Asked before ``ray.init``, which retries an address forever whatever listens
there (seen: 128 s of Ray's GCS warnings in front of an HTTP server).

Two steps, each bounded: the HTTP/2 connection preface (a gRPC server such as the GCS answers it with its SETTINGS
frame at once; an HTTP/1 server, an SSH daemon or Redis answer otherwise, a server of another protocol says nothing
or hangs up), then Ray's own GCS client (``ray._raylet.InnerGcsClient.standalone``, what ``ray status`` and the
autoscaler use) asking the cluster's id within the timeout, its C++ warnings kept off the terminal.
"""

from __future__ import annotations

import contextlib
import os
import socket

# the client connection preface and an empty SETTINGS frame (RFC 9113 §3.4)
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_SETTINGS = 0x4


def http2_answer(host: str, port: int, timeout: float) -> str | None:
    """None when an HTTP/2 server answers at ``host:port``; else what answered, as words for a message."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as e:  # 127.0.0.1 answered, but Ray connects to this machine's IP
        return f"nothing listens there: {e.strerror or type(e).__name__}"
    try:
        with sock:
            sock.settimeout(timeout)
            sock.sendall(_PREFACE)
            reply = b""
            while len(reply) < 9:
                chunk = sock.recv(9 - len(reply))
                if not chunk:
                    break
                reply += chunk
    except socket.timeout:
        return f"a server that says nothing within {timeout:g} s?"
    except OSError as e:
        return f"a server that hangs up ({e.strerror or type(e).__name__})?"
    if len(reply) == 9 and reply[3] == _SETTINGS:
        return None
    return _what_replied(reply)


def _what_replied(reply: bytes) -> str:
    if not reply:
        return "a server that hangs up without a word?"
    if reply.startswith(b"HTTP/") or reply.lstrip().startswith(b"<"):
        return "an HTTP server?"
    if reply.startswith(b"SSH-"):
        return "an SSH server?"
    if reply[:1] in (b"-", b"+"):
        return "a Redis server?"
    return f"a server that answers {reply[:9]!r}?"


def gcs_problem(address: str, timeout: float) -> str | None:
    """None when Ray's GCS client reaches a GCS at ``address`` within ``timeout``; else why not, in a few words."""
    # lazy: the compiled Ray core, loaded only for a cluster address
    from ray._raylet import InnerGcsClient

    try:
        with _stderr_off():  # its C++ warnings ("Failed to connect to GCS ...") go to the process's fd 2
            InnerGcsClient.standalone(address, None, int(timeout * 1000))
    except Exception as e:  # noqa: BLE001 - RpcError, or whatever this Ray raises for a server that is no GCS
        detail = " ".join(str(e).split()).rstrip(":")[:120]
        return f"not Ray's GCS ({detail})" if detail else "not Ray's GCS"
    return None


@contextlib.contextmanager
def _stderr_off():
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
