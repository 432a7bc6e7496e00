"""``assay serve``: the REST API and web UI over a run store (needs ``assay[server]``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer

from assay.cli.app import app, console, friendly_errors
from assay.cli.run import store_url
from assay.errors import ConfigError
from assay.report.safe_text import for_terminal

DEFAULT_PORT = 8765
"""``assay serve``'s port; the mock server's is another (``mock_server.DEFAULT_PORT``), so
that both can run at once with their defaults."""


@app.command()
@friendly_errors
def serve(
    store: str | None = typer.Option(None, "--store", help="Run store URL."),
    host: str = typer.Option("127.0.0.1", "--host",
                             help="Address to listen on; anything but loopback needs "
                                  "ASSAY_SERVER_TOKEN."),
    port: int = typer.Option(DEFAULT_PORT, "--port", min=0, max=65535),
    suites: list[Path] = typer.Option(
        [], "--suites", help="A directory whose suites POST /runs may start (repeatable; "
        "default: the current directory)."),
    no_runs: bool = typer.Option(False, "--no-runs", help="Refuse POST /runs."),
    allow_judge_models: list[str] = typer.Option(
        [], "--allow-judge-model", help="A judge model POST /runs may name (repeatable); "
        "besides these, only the default judge ($ASSAY_JUDGE_MODEL)."),
    targets: Path | None = typer.Option(
        None, "--targets", help="The targets file of runs started by POST /runs, whose "
        "targets a request may name (default: the one found above each suite)."),
    max_trace_bytes: int = typer.Option(
        16 << 20, "--max-trace-bytes", help="The largest OTLP export POST /v1/traces takes, "
        "compressed or not (default 16 MiB)."),
    watch: bool = typer.Option(False, "--watch", help="Judge the traces received, online "
                               "(as assay watch store does), while serving."),
    watch_suite: Path | None = typer.Option(None, "--watch-suite", help="With --watch: the "
                                            "suite whose evaluators judge the traces."),
    watch_judges: str | None = typer.Option(None, "--watch-judges", help="With --watch: "
                                            "built-in agent judges, comma-separated."),
    watch_rate: float = typer.Option(1.0, "--watch-rate", min=0.0, max=1.0,
                                     help="With --watch: the fraction of traces judged."),
    watch_max_cost: float | None = typer.Option(
        None, "--watch-max-cost-per-hour", min=0.0, help="With --watch: start no judging "
        "once the last hour's judging cost reached this (dollars)."),
    watch_interval: float = typer.Option(30.0, "--watch-interval", min=0.1,
                                         help="With --watch: seconds between passes."),
) -> None:
    """Serve the runs of a store: a REST API (OpenAPI at /openapi.json) and a web UI."""
    try:
        import uvicorn

        from assay.server.app import create_app
        from assay.server.settings import ServerSettings
    except ImportError:
        raise ConfigError("assay serve needs the server extra: pip install 'assay[server]'",
                          code="missing_dependency") from None
    from assay._util.listening import bound_port, listen
    from assay.server.settings import WatchSettings
    from assay.store.runs import RunStore

    url = store_url(store)
    if (watch_suite or watch_judges) and not watch:
        raise ConfigError("--watch-suite and --watch-judges go with --watch")
    watching = WatchSettings(
        suite=watch_suite, rate=watch_rate, max_cost_per_hour=watch_max_cost,
        interval_s=watch_interval,
        judges=[j.strip() for j in (watch_judges or "").split(",") if j.strip()]) \
        if watch else None
    if watching is not None and not (watching.suite or watching.judges):
        raise ConfigError("--watch needs evaluators: --watch-suite SUITE or --watch-judges")
    settings = ServerSettings.from_environment(
        url, host=host, suite_roots=[p.resolve() for p in suites] or None,
        allow_runs=not no_runs, allowed_judge_models=[m.strip() for m in allow_judge_models],
        targets_file=targets.resolve() if targets is not None else None,
        max_trace_bytes=max_trace_bytes)
    settings.watch = watching
    opened = RunStore(url)  # a store that cannot be opened is an error now, not on first use
    shown_url = opened.display_url
    opened.close()
    application = create_app(settings)
    sock = listen(host, port)  # a port in use is one line, before anything says "serving"
    shown = f"[{host}]" if ":" in host else host
    link = f"http://{shown}:{bound_port(sock)}/"
    console.print(f"assay serving {for_terminal(shown_url)} at {link}",
                  highlight=False)
    console.print(f"OTLP/HTTP traces are received at {link}v1/traces "
                  f"(OTEL_EXPORTER_OTLP_ENDPOINT={link.rstrip('/')})", highlight=False)
    if settings.token is not None:
        console.print("clients must send 'Authorization: Bearer $ASSAY_SERVER_TOKEN'; the web "
                      "UI asks for the token once per browser tab", highlight=False)
    config = uvicorn.Config(application, host=host, port=bound_port(sock),
                            log_level="warning", server_header=False, proxy_headers=False,
                            h11_max_incomplete_event_size=64 * 1024)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: uvicorn has shut down already
        uvicorn.Server(config).run(sockets=[sock])
