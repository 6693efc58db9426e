"""The conformance kit's tests under pytest: ``pytest --responses-url URL`` runs every
scenario against the endpoint at ``URL`` (its base, ``.../v1``), one test per scenario
and form (``responses-conformance::text[stream]``, ...).  A failing scenario fails with
its rule ids and messages; one the model did not exercise is skipped, saying why.

pytest loads the top-level ``responses_stream_pytest`` module (the package's
``pytest11`` entry point): it registers the options and imports this module only when
``--responses-url`` is given, so that a pytest session without it never imports the
package (a project's own copy of it, on its own path, stays the one its tests see).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..core.errors import ResponsesStreamError

COLLECTOR = "responses-conformance"


def conformance_items(session: pytest.Session) -> list[pytest.Item]:
    """The scenarios' tests, for ``--responses-url`` (the shim's collection hook)."""
    collector = Conformance.from_parent(session, name=COLLECTOR, nodeid=COLLECTOR)
    return list(collector.collect())


class Conformance(pytest.Collector):
    """The scenarios, as items sharing one checker."""

    def collect(self) -> Iterator[ScenarioItem]:
        from .run import forms_of, selected

        stateful = bool(self.config.getoption("--responses-stateful"))
        for name in selected(stateful=stateful):
            for form in forms_of(name):
                yield ScenarioItem.from_parent(
                    self, name=f"{name}[{form}]", scenario=name, form=form
                )

    def checker(self) -> Any:
        checker = getattr(self, "_checker", None)
        if checker is None:
            from .run import Checker, make_target

            option = self.config.getoption
            target = make_target(
                option("--responses-url"),
                option("--responses-model"),
                api_key=option("--responses-api-key"),
                dialect=option("--responses-dialect"),
                timeout=option("--responses-timeout"),
                max_output_tokens=option("--responses-max-output-tokens"),
                prompts=option("--responses-prompt") or (),
                extra_body=option("--responses-extra-body"),
            )
            checker = self._checker = Checker(target)
            self.config.add_cleanup(checker.close)
        return checker


class ScenarioFailed(ResponsesStreamError):
    """A scenario broke rules; its findings, one per line."""


class ScenarioItem(pytest.Item):
    def __init__(self, *, scenario: str, form: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.form = form

    def runtest(self) -> None:
        from .run import FAIL, MODEL, PASS

        assert isinstance(self.parent, Conformance)
        [outcome] = self.parent.checker().run_one(self.scenario, [self.form])
        if outcome.verdict == FAIL:
            where = (
                f" (first failing event: {outcome.first_failing})" if outcome.first_failing else ""
            )
            lines = outcome.lines()
            raise ScenarioFailed(f"{', '.join(outcome.rules)}{where}\n" + "\n".join(lines))
        if outcome.verdict == MODEL:
            pytest.skip(f"the model, not the protocol: {'; '.join(outcome.lines())}")
        if outcome.verdict != PASS:
            pytest.skip(f"not exercised: {outcome.note}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ScenarioFailed):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return COLLECTOR, None, f"{self.scenario} ({self.form})"
