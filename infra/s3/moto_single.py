"""moto's S3 server, single-threaded: `python moto_single.py HOST PORT`.

Builds the same WSGI app as `moto_server` (moto/server.py) but serves it with threaded=False. moto
checks If-None-Match / If-Match and then writes, without a lock, so under its default threaded
server two conditional PUTs can both succeed; serving one request at a time makes the check and the
write effectively atomic, which our fencing tests rely on. Werkzeug answers `Expect: 100-continue`
itself and closes every connection (`Connection: close`), so an idle keep-alive client cannot hold
the single thread. State is in memory only and is lost when the process stops.
"""
import os
import signal
import sys

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)


class Handler(MotoRequestHandler):
    # A client that connects and then sends nothing would block everyone else: drop it after 60 s.
    timeout = 60


def main() -> None:
    host = sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 9000
    os.environ.setdefault("MOTO_PORT", str(port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, app, threaded=False, processes=1, request_handler=Handler)


if __name__ == "__main__":
    main()
