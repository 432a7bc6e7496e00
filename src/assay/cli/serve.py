"""``assay serve``: the REST API and web UI over a run store (needs ``assay[server]``)."""

from __future__ import annotations

from pathlib import Path

import typer

from assay.cli.app import app, console, friendly_errors
from assay.cli.run import store_url
from assay.errors import ConfigError
from assay.report.safe_text import for_terminal


@app.command()
@friendly_errors
def serve(
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    host: str = typer.Option("127.0.0.1", "--host",
                             help="Address to listen on; anything but loopback needs "
                                  "ASSAY_SERVER_TOKEN."),
    port: int = typer.Option(8765, "--port", min=0, max=65535),
    suites: list[Path] = typer.Option(
        [], "--suites", help="A directory whose suites POST /runs may start (repeatable; "
        "default: the current directory)."),
    no_runs: bool = typer.Option(False, "--no-runs", help="Refuse POST /runs."),
) -> None:
    """Serve the runs of a store: a REST API (OpenAPI at /openapi.json) and a web UI."""
    try:
        import uvicorn

        from assay.server.app import create_app
        from assay.server.settings import ServerSettings
    except ImportError:
        raise ConfigError("assay serve needs the server extra: pip install 'assay[server]'",
                          code="missing_dependency") from None
    from assay.store.runs import RunStore

    url = store_url(store)
    settings = ServerSettings.from_environment(
        url, host=host, suite_roots=[p.resolve() for p in suites] or None,
        allow_runs=not no_runs)
    opened = RunStore(url)  # a store that cannot be opened is an error now, not on first use
    shown_url = opened.display_url
    opened.close()
    shown = f"[{host}]" if ":" in host else host
    link = f"http://{shown}:{port}/"
    console.print(f"assay serving {for_terminal(shown_url)} at {link}",
                  highlight=False)
    if settings.token is not None:
        console.print("clients must send 'Authorization: Bearer $ASSAY_SERVER_TOKEN'; the web "
                      "UI asks for the token once per browser tab", highlight=False)
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning",
                server_header=False, proxy_headers=False,
                h11_max_incomplete_event_size=64 * 1024)

