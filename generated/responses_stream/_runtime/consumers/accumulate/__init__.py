"""Fold a Responses event stream into a snapshot of its Response, driven by the tables.

``ResponseAccumulator`` takes event payloads (plain dicts, as parsed from the
SSE ``data:`` JSON) one at a time and keeps the Response they describe so far.
Nothing here is written per event type; the generated tables say what each
event means:

* the envelope machine (``ENVELOPE``) orders the lifecycle events; those
  carrying a ``response`` replace the snapshot, and the ones that reach a
  final state are terminal;
* the event that opens an item (the first one emitted from an item machine's
  initial state) puts its ``item`` at ``output[output_index]``; the event that
  closes it (the last one emitted on the way into a final state) replaces it;
* the events that open and close parts do the same inside the item's slot
  list (the item field that holds the slot taking that part kind), addressed
  by the part kind's index key (``content_index`` / ``summary_index``);
* an accumulator's ``deltas`` append their payload field to the item or part
  field that holds the accumulator (``text``: string concatenation, ``list``:
  extend with a list, append anything else); its ``totals`` set that field;
* the spec's ``status`` actions are not in the tables, so an item's status is
  set from a phase event only where the tables show it: the event's transition
  moves the item into a non-final state whose name is one of the item's statuses
  (``searching``, ``generating``, ``interpreting``, ``calling``).  Statuses set
  by transitions into a final state (``completed``, ``failed``, ...) arrive with
  the item-closing event instead.

Accumulators that no field holds (an image call's ``partial_images``) and the
events of thin items (a shell call's commands) are checked but change nothing.

The accumulator is a tolerant consumer, like the official SDK's
``ResponseStreamState``: an event type the dialect does not know passes
through (it changes nothing); an item of a type the spec does not know is
taken from its opening event and replaced by its closing one as sent, and the
events in between change nothing; a stream may skip ``response.in_progress``;
``output_index`` may have gaps (items are kept in the order they open); an
opening event without its item is ignored; an ``item_id`` on an item's events
and the response id on lifecycle events are not checked (a gateway that hands
out fresh ids on every event is followed by ``output_index``).  What stays an
``AccumulateError`` is what no reading can fold: events before the response
is created or after the terminal event, sequence numbers that go back, events
for items or parts that were never opened or are already closed, indexes out
of order, payload fields of the wrong type, a closing item of another type;
and what contradicts itself: an item that closes
``in_progress`` (but a ``function_call`` made by a program, which stays
``in_progress`` until the program ends), a terminal output (not failed) that lacks an item
that was streamed or puts another type in its place.  Items still open when the
response completes are a repair, as in the SDK: the terminal response's own output is
taken (OpenAI leaves ``mcp_list_tools`` items unclosed), and a done text (a ``*.done``
event, a closing part or item) that differs from the deltas streamed for it is taken, as
the SDK takes it.  Each repair is a warning in ``warnings`` and on this module's logger
(``check_texts=False``, or sequence numbers that skip, which say events were lost, let
done texts stand without one); without an output to take, unclosed items are an error.
Opaque fields (``encrypted_content``, ``fingerprint``) are never compared, and a
surrogate pair split over two deltas counts as the character it encodes.

A stream resumed with ``starting_after`` begins past sequence_number 0 without
``response.created``.  When its first event carries the response (``response.queued``,
``response.in_progress``) it is folded from there, with a warning; otherwise the events
before it made a Response it lacks, an ``AccumulateError`` that says so.
``ResponseAccumulator.resume`` goes on from the earlier accumulator or a snapshot of it,
skipping the events it already folded, as the SDK does.
"""

from __future__ import annotations

from .accumulator import ResponseAccumulator
from .plan import AccumulateError

__all__ = ["AccumulateError", "ResponseAccumulator"]
