"""The pytest plugin of ``responses-stream`` (its ``pytest11`` entry point):
``pytest --responses-url URL [--responses-model M]`` runs the conformance kit's
scenarios against the Responses endpoint at ``URL``, one test per scenario and form
(the ``check`` extra).

This module is all pytest loads in every session: it registers the options and, only
when ``--responses-url`` is given, imports the package's tests
(``responses_stream._runtime.check.pytest_plugin``).  A session without the option never
imports ``responses_stream``, so a project that tests its own copy of the package sees
its own.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("responses", "Responses API conformance (responses-stream check)")
    group.addoption("--responses-url", metavar="URL", help="the endpoint's base URL (.../v1)")
    group.addoption(
        "--responses-model",
        metavar="MODEL",
        default="default",
        help="the model to ask (default: %(default)s)",
    )
    group.addoption(
        "--responses-api-key",
        metavar="KEY",
        help="sent as a bearer token (default: OPENAI_API_KEY)",
    )
    group.addoption(
        "--responses-dialect",
        choices=("openai", "openresponses"),
        default="openai",
        help="the dialect judged (default: %(default)s)",
    )
    group.addoption(
        "--responses-stateful",
        action="store_true",
        help="also run the stateful scenario (store, GET, continue, DELETE)",
    )
    group.addoption(
        "--responses-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="the longest wait for a connection, the answer's headers, or each read of it"
        " (default: %(default)s)",
    )
    group.addoption(
        "--responses-prompt",
        action="append",
        metavar="NAME=TEXT",
        help="the user prompt of scenario NAME, instead of its own; repeatable",
    )
    group.addoption(
        "--responses-extra-body",
        metavar="JSON",
        help="fields added to every request body, as a JSON object",
    )
    group.addoption(
        "--responses-max-output-tokens",
        type=int,
        default=256,
        metavar="N",
        help="each answer's max_output_tokens where a scenario sets none; 0: no limit"
        " (default: %(default)s)",
    )


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.getoption("--responses-url"):
        return
    from responses_stream._runtime.check.pytest_plugin import conformance_items

    items.extend(conformance_items(session))
