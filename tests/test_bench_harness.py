"""The benchmark harness's rules for figures: spreads, retries, no figure at or below zero."""

from __future__ import annotations

from benchmarks.harness import SPREAD_BOUND, TRIES, Machine, Report, Target, spread_of, steady
from benchmarks.report import bar_slots, colours, figure, table, verdict


def test_spread_is_largest_over_smallest_and_infinite_past_zero() -> None:
    assert spread_of([2.0, 3.0, 2.5]) == 1.5
    assert spread_of([-1.0, 3.0]) == float("inf")
    assert spread_of([0.0, 3.0]) == float("inf")


def test_steady_measures_again_until_the_spread_is_under_the_bound() -> None:
    takes = iter([{"a": [1.0, 4.0]}, {"a": [1.0, 2.0]}, {"a": [1.0, 1.1]}, {"a": [9.0, 9.0]}])
    samples, tries = steady(lambda: next(takes))
    assert (samples, tries) == ({"a": [1.0, 1.1]}, 3)


def test_steady_keeps_the_steadiest_when_none_is_under_the_bound() -> None:
    takes = iter([{"a": [1.0, 4.0]}, {"a": [1.0, 2.0]}, {"a": [-1.0, 2.0]}])
    samples, tries = steady(lambda: next(takes))
    assert (samples, tries) == ({"a": [1.0, 2.0]}, TRIES)


def test_steady_takes_once_when_the_first_measurement_holds() -> None:
    calls: list[int] = []

    def take(n: int) -> dict[str, list[float]]:
        calls.append(n)
        return {"a": [1.0, 1.2], "b": [5.0, 5.5]}

    assert steady(take, 7) == ({"a": [1.0, 1.2], "b": [5.0, 5.5]}, 1)
    assert calls == [7]


def test_an_unsteady_row_is_marked_and_noted_and_never_printed_below_zero() -> None:
    r = Report()
    med = r.add("S", "p", {"ours": [1.0, 1.1, 1.05], "other": [-17.2, 11.7, 21.7]}, "µs", tries=3)
    ours, other = r.rows
    assert ours.steady and not other.steady
    assert figure(ours) == "1.05 µs (1–1.1, 1.10×)"
    assert figure(other) == "11.7 µs (unsteady: a round at or below zero)"
    assert "-17" not in table(r)
    assert len(r.notes) == 1 and "other" in r.notes[0] and "3 measurements" in r.notes[0]
    t = r.target("S", "p", med, "other", "ours", ">=", 3)
    assert not t.steady and verdict(t) == "met (from unsteady medians)"


def test_a_median_at_or_below_zero_is_not_a_figure() -> None:
    r = Report()
    r.add("S", "p", {"ours": [-2.0, -1.0, 0.5]}, "µs")
    assert figure(r.rows[0]) == "below the noise (µs)"
    assert "noise" in table(r) and "-1" not in table(r)


def test_the_spread_bound_marks_rows_at_the_bound_unsteady() -> None:
    r = Report()
    r.add("S", "p", {"ours": [1.0, SPREAD_BOUND]}, "µs")
    assert not r.rows[0].steady


def test_a_busy_machine_is_flagged() -> None:
    quiet = Machine(busy_start=0.05, busy_end=0.1)
    busy = Machine(busy_start=0.05, busy_end=0.6)
    assert not quiet.busy and "quiet" in quiet.summary()
    assert busy.busy and "busy machine" in busy.summary() and "60%" in busy.summary()


def test_a_target_at_or_below_zero_is_not_printed_as_a_figure() -> None:
    r = Report()
    r.targets.append(Target("S", "p", "ms added", -44.28, "<=", 5, unit="ms", steady=False))
    out = table(r)
    assert "-44" not in out and "≤ 0 (noise)" in out and "met (from unsteady medians)" in out


def test_an_unsteady_note_says_when_one_round_stood_apart() -> None:
    r = Report()
    r.add("S", "p", {"ours": [22.6, 21.0, 23.1, 155.0, 22.0]}, "ms")
    assert (
        "one round stood apart (155 ms, the median 22.6); the other 4 spread 1.10×" in (r.notes[0])
    )
    r.add("S", "q", {"ours": [1.0, 2.0, 3.0, 4.0]}, "ms")
    assert "stood apart" not in r.notes[1] and "4 rounds spread 4.00× (1 to 4)" in r.notes[1]


def test_a_plot_row_shares_its_band_among_the_bars_it_has() -> None:
    two = [(round(y, 6), round(h, 6)) for y, h in bar_slots(3, 2)]
    assert two == [(2.8, 0.4), (3.2, 0.4)]  # wide, and centred on the row's label at 3
    five = bar_slots(0, 5)
    assert [round(y, 6) for y, _ in five] == [-0.32, -0.16, 0.0, 0.16, 0.32]
    assert {round(h, 6) for _, h in five} == {0.16}
    assert bar_slots(1, 0) == []


def test_every_candidate_has_a_colour_when_they_outnumber_the_palette() -> None:
    names = [f"candidate {n}" for n in range(13)]
    given = colours(names, ["red", "green", "blue", "grey", "gold"])
    assert list(given) == names
    assert [given[n] for n in names[:6]] == ["red", "green", "blue", "grey", "gold", "red"]


def test_the_pydantic_baseline_builds_its_event_validator_once_a_process() -> None:
    # A server builds the union's validator at start-up; one built on each stream
    # would charge the baseline tens of milliseconds a stream that no server pays.
    from benchmarks.baselines import PydanticChat

    first, second = PydanticChat("m"), PydanticChat("m")
    assert first._any is second._any
    where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
    done = {"type": "response.output_text.done", "sequence_number": 3, **where}
    frame = first.event(done | {"text": "hi", "logprobs": []})
    assert frame.startswith(b"event: response.output_text.done\ndata: {")
