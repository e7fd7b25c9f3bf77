"""The HTTP API's entry points (the code lives in ``projections.http``)."""

from projections.http.app import create_app
from projections.http.context import DEFAULT_PROCESSORS, ApiDeps
from projections.http.server import serve

__all__ = ["DEFAULT_PROCESSORS", "ApiDeps", "create_app", "serve"]
