"""The pytest-xdist role of a pytest process, read from its config: a worker runs cases, the controller hands
them out and writes the reports. Below every layer, so that the front end's plugins and a feature's session
plugin read the roles alike (the config is typed loosely: the core imports no pytest)."""

from __future__ import annotations

from typing import Any


def is_worker(config: Any) -> bool:
    """Whether this process is a pytest-xdist worker (it runs cases; the controller writes reports)."""
    return hasattr(config, "workerinput")


def is_xdist_controller(config: Any) -> bool:
    return bool(config.pluginmanager.hasplugin("dsession"))
