"""One base for every exception of the package: ``except ResponsesStreamError`` catches
whatever it raises, and each class still derives from the builtin it derived from
before the base existed, so clauses written for those keep working."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from typing import Any

import pytest

import responses_stream
from responses_stream import ResponsesStreamError

# Each exception class the package had before the base, and the builtin it derived from.
BUILTIN_BASES: dict[str, type[BaseException]] = {
    "AccumulateError": ValueError,
    "BadChunk": ValueError,
    "BadArguments": ValueError,
    "BadHarmony": ValueError,
    "BadStream": ValueError,
    "ConfigError": ValueError,
    "ConnectTimeout": TimeoutError,
    "EmptyInput": ValueError,
    "InputFormError": ValueError,
    "LimitExceeded": RuntimeError,
    "ProcessorError": RuntimeError,
    "SSEDecodeError": ValueError,
    "SSELimitError": ValueError,
    "TransitionError": RuntimeError,
    "ClientError": Exception,
    "GatewayError": Exception,
    "ScenarioFailed": Exception,
    "StoreError": Exception,
    "StoreUnavailable": Exception,
    "UpstreamInterrupted": Exception,
    "UsageError": Exception,
    "_Unusable": Exception,
    # what the package raised as bare builtins, now classes of its own
    "BadValue": ValueError,
    "MissingArgument": TypeError,
    "NotReady": RuntimeError,
    "TransportError": ValueError,  # a BadValue naming the setting
}


def exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the package, by name."""
    found: dict[str, type[BaseException]] = {}
    prefix = responses_stream.__name__ + "."
    for info in pkgutil.walk_packages(responses_stream.__path__, prefix):
        if info.name.endswith(".__main__"):  # runs the command line when imported
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                found[obj.__qualname__] = obj
    return found


def test_every_exception_class_derives_from_the_base() -> None:
    classes = exception_classes()
    stray = sorted(
        name for name, cls in classes.items() if not issubclass(cls, ResponsesStreamError)
    )
    assert stray == [], f"not derived from ResponsesStreamError: {stray}"
    assert set(classes) - {"ResponsesStreamError"} == set(BUILTIN_BASES), (
        "an exception class was added or removed: state its builtin base in BUILTIN_BASES"
    )


@pytest.mark.parametrize("name", sorted(BUILTIN_BASES))
def test_each_class_keeps_its_builtin_base(name: str) -> None:
    cls = exception_classes()[name]
    assert issubclass(cls, BUILTIN_BASES[name]), cls.__mro__


def _bad_limits() -> None:
    responses_stream.Limits(max_output_items=-1)


def _bad_reasoning_mode() -> None:
    responses_stream.ResponsesToChat(reasoning="loud")  # type: ignore[arg-type]


def _bad_sse() -> None:
    list(responses_stream.parse_sse([b"data: " + b"x" * 64 + b"\n\n"], max_event_bytes=16))


def _done_twice() -> None:
    proc = responses_stream.StreamProcessor()
    proc.start()
    proc.finish()
    proc.finish()


def _accumulator_fed_junk() -> None:
    responses_stream.ResponseAccumulator().feed({"type": "response.output_text.delta"})


def _bad_input_form() -> None:
    list(responses_stream.sse_from_input([b""], input="yaml"))


def _unknown_item_type() -> None:
    proc = responses_stream.StreamProcessor()
    proc.start()
    proc.open("no_such_item")


def _bad_async_source() -> None:
    async def run() -> None:
        async for _ in responses_stream.aparse_sse(_chunks(), max_event_bytes=4):
            pass

    asyncio.run(run())


async def _chunks() -> Any:
    yield b"data: too long for the limit\n\n"


PROVOKED: dict[str, Callable[[], None]] = {
    "a limit that is not positive": _bad_limits,
    "an unknown reasoning mode": _bad_reasoning_mode,
    "an SSE event over its size limit": _bad_sse,
    "a stream finished twice": _done_twice,
    "an event the accumulator cannot fold": _accumulator_fed_junk,
    "an unknown input form": _bad_input_form,
    "an unknown item type in the direct API": _unknown_item_type,
    "an async SSE event over its size limit": _bad_async_source,
}


@pytest.mark.parametrize("case", sorted(PROVOKED))
def test_the_base_catches_what_each_public_entry_raises(case: str) -> None:
    with pytest.raises(ResponsesStreamError) as caught:
        PROVOKED[case]()
    assert str(caught.value), f"{case}: an error without a message"
