"""A pytest plugin loaded before all others (pyproject.toml: addopts `-p helpers._pytest_startup`).

It only makes test processes start faster; notebooks never import it.

jsonschema (imported by nbformat, which nbval imports at plugin load) builds a Lark grammar
for RFC 3987 IRIs at import time when `rfc3987_syntax` is installed (it comes with
JupyterLab's dependencies): seconds of CPU in the pytest process and again in each xdist
worker. Notebook validation never checks an "iri" format, so we tell Python that the module
is absent; jsonschema then simply has no IRI format checker.
"""
import sys

sys.modules.setdefault("rfc3987_syntax", None)
