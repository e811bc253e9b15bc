"""Prometheus exposition for a service: `/metrics` on its own port, started in `main`."""

from __future__ import annotations

from prometheus_client import start_http_server


def serve_metrics(port: int, host: str = "127.0.0.1") -> None:
    """Serve the default registry's metrics on http://host:port/metrics (port 0 disables)."""
    if port:
        start_http_server(port, addr=host)
