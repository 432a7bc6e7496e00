"""A listening TCP socket, bound before a server says where it serves.

``assay serve`` and the mock server bind their port here first and only then print their
address and hand the socket to their HTTP server: a port that is taken is one clear line (and
no banner, no traceback), and a port of 0 is shown as the port the system chose. Standard
library only, usable from any layer.
"""

from __future__ import annotations

import errno
import socket

from assay.errors import ConfigError

BACKLOG = 2048
"""Connections the system queues before the server accepts them (uvicorn's default)."""


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host``:``port`` and listening; a :class:`ConfigError` that says
    in one line why not (the port taken, the address not this machine's, a name unknown)."""
    where = f"{host}:{port}" if ":" not in host else f"[{host}]:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (OSError, UnicodeError) as exc:
        raise ConfigError(f"cannot listen on {host!r}: {_reason(exc)}",
                          code="cannot_listen") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # not SO_REUSEPORT
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is already in use (another server "
                              "listens there): stop it, or choose another port with --port",
                              code="port_in_use") from None
        raise ConfigError(f"cannot listen on {where}: {_reason(exc)}",
                          code="cannot_listen") from None
    return sock


def bound_port(sock: socket.socket) -> int:
    """The port a listening socket has (the one the system chose for port 0)."""
    return int(sock.getsockname()[1])


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
