"""The XMODEM/YMODEM transition tables: complete (every state x input pair is a rule, an explicit
ignore or an explicit refusal), shaped so no state can hang, and really what drives the machines."""

from __future__ import annotations

from enum import Enum

import pytest

from serial_mcp import messages
from serial_mcp.core.xmodem import XmodemReceiver, XmodemSender, YmodemReceiver, YmodemSender
from serial_mcp.core.xmodem_receiver import RECEIVER_TABLE, ReceiverInput, ReceiverState
from serial_mcp.core.xmodem_sender import (
    XMODEM_SENDER_TABLE,
    YMODEM_SENDER_TABLE,
    SenderInput,
    SenderState,
)
from serial_mcp.core.xmodem_table import Ignore, Refuse, Rule, Table, check_table
from serial_mcp.core.xmodem_wire import ABORT_SEQUENCE, ACK, NAK, Done, YmodemFile

TABLES: dict[str, tuple[Table[object, Enum], type[Enum], type[Enum]]] = {
    "xmodem sender": (XMODEM_SENDER_TABLE, SenderState, SenderInput),  # type: ignore[dict-item]
    "ymodem sender": (YMODEM_SENDER_TABLE, SenderState, SenderInput),  # type: ignore[dict-item]
    "receiver": (RECEIVER_TABLE, ReceiverState, ReceiverInput),  # type: ignore[dict-item]
}


def reachable(table: Table[object, Enum], start: Enum) -> set[Enum]:
    seen = {start}
    todo = [start]
    while todo:
        state = todo.pop()
        for (s, _), entry in table.items():
            if s is state and isinstance(entry, Rule):
                for nxt in entry.then - seen:
                    seen.add(nxt)
                    todo.append(nxt)
    return seen


@pytest.mark.parametrize("name", TABLES)
def test_every_state_and_input_pair_has_exactly_one_explicit_entry(name: str) -> None:
    table, states, inputs = TABLES[name]
    pairs = [(s, i) for s in states for i in inputs]
    assert sorted(map(str, table)) == sorted(map(str, pairs))
    for pair in pairs:
        entry = table[pair]
        assert isinstance(entry, Rule | Ignore | Refuse), pair
        if isinstance(entry, Rule):
            assert entry.then and entry.then <= set(states), pair
        else:
            assert entry.why, pair  # an ignore or a refusal says why


@pytest.mark.parametrize("name", TABLES)
def test_no_state_can_hang_and_every_state_can_end(name: str) -> None:
    """From the start, every state reached waits on a timer (its TIMEOUT is a rule, not an ignore),
    and the transfer's end is reachable from it; states never reached are refused throughout."""
    table, states, inputs = TABLES[name]
    done = states["DONE"]
    live = reachable(table, states["START"])
    assert done in live
    for state in live - {done}:
        assert isinstance(table[(state, inputs["TIMEOUT"])], Rule), state
        assert done in reachable(table, state), state
    for state in set(states) - live:
        assert all(isinstance(table[(state, i)], Refuse) for i in inputs), state


def test_each_protocol_uses_its_own_states() -> None:
    xmodem = reachable(XMODEM_SENDER_TABLE, SenderState.START)  # type: ignore[arg-type]
    ymodem = reachable(YMODEM_SENDER_TABLE, SenderState.START)  # type: ignore[arg-type]
    assert xmodem == {
        SenderState.START,
        SenderState.WAIT_BLOCK_ACK,
        SenderState.WAIT_EOT_ACK,
        SenderState.DONE,
    }
    assert ymodem == set(SenderState)
    assert reachable(RECEIVER_TABLE, ReceiverState.START) == set(ReceiverState)  # type: ignore[arg-type]


def test_check_table_refuses_a_gap_and_a_rule_to_nowhere() -> None:
    gap = dict(RECEIVER_TABLE)
    del gap[(ReceiverState.WAIT, ReceiverInput.EOT)]
    with pytest.raises(ValueError, match="missing"):
        check_table(gap, ReceiverState, ReceiverInput)
    nowhere = dict(XMODEM_SENDER_TABLE)
    rule = nowhere[(SenderState.START, SenderInput.C)]
    assert isinstance(rule, Rule)
    nowhere[(SenderState.START, SenderInput.C)] = Rule(rule.action, frozenset({ReceiverState.WAIT}))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown states"):
        check_table(nowhere, SenderState, SenderInput)


def make(name: str) -> XmodemSender | YmodemSender | XmodemReceiver | YmodemReceiver:
    if name == "xmodem sender":
        return XmodemSender(b"x" * 300)
    if name == "ymodem sender":
        return YmodemSender([YmodemFile("f", b"x" * 300)])
    return YmodemReceiver()


REFUSALS = [
    (name, state, received)
    for name, (table, _, _) in TABLES.items()
    for (state, received), entry in table.items()
    if isinstance(entry, Refuse)
]


@pytest.mark.parametrize(("name", "state", "received"), REFUSALS, ids=lambda v: getattr(v, "name", v))
def test_a_refused_input_ends_the_transfer_with_a_protocol_error(
    name: str, state: Enum, received: Enum
) -> None:
    machine = make(machine_name := name)
    machine.next_output()
    machine._state = state  # type: ignore[assignment]  # put it where the refusal lives
    events: list[object] = []
    machine._handle(received, events)  # type: ignore[arg-type]
    [done] = [e for e in events if isinstance(e, Done)]
    assert not done.result.ok and machine.done and machine.state.name == "DONE", machine_name
    entry = TABLES[name][0][(state, received)]
    assert isinstance(entry, Refuse)
    expected = messages.XMODEM_PROTOCOL_ERROR.format(event=received.value, state=state.value, why=entry.why)
    assert done.result.error == expected
    assert machine.next_output() == ABORT_SEQUENCE  # the peer is told


def test_the_table_is_what_drives_the_sender() -> None:
    """Swap one entry and the machine's behaviour follows: a NAK that the table refuses ends the
    transfer instead of a resend."""
    sender = XmodemSender(b"x" * 300)
    sender.receive_bytes(b"C")
    first = sender.next_output()
    sender.receive_bytes(bytes([NAK]))
    assert sender.next_output() == first  # the real table resends
    sender._table = {**XMODEM_SENDER_TABLE, (SenderState.WAIT_BLOCK_ACK, SenderInput.NAK): Refuse("test")}
    [done] = sender.receive_bytes(bytes([NAK]))
    assert isinstance(done, Done) and "test" in (done.result.error or "")


def test_the_machines_report_their_state() -> None:
    sender, receiver = XmodemSender(b"x" * 200), XmodemReceiver()
    seen: list[Enum] = [sender.state, receiver.state]
    sender.receive_bytes(receiver.next_output())
    seen.append(sender.state)
    block = sender.next_output()
    receiver.receive_bytes(block[:50])
    seen.append(receiver.state)
    receiver.receive_bytes(block[50:])
    seen.append(receiver.state)
    assert receiver.next_output() == bytes([ACK])
    sender.cancel()
    seen.append(sender.state)
    assert seen == [
        SenderState.START,
        ReceiverState.START,
        SenderState.WAIT_BLOCK_ACK,
        ReceiverState.IN_BLOCK,
        ReceiverState.WAIT,
        SenderState.DONE,
    ]


def test_an_action_that_leaves_its_rule_is_caught() -> None:
    """A rule names the states its action may lead to; an action that goes elsewhere is a bug in
    the machine and stops it loudly instead of running on in a state the table did not plan."""
    sender = XmodemSender(b"x" * 300)
    rule = XMODEM_SENDER_TABLE[(SenderState.START, SenderInput.C)]
    assert isinstance(rule, Rule)
    narrowed = Rule(rule.action, frozenset({SenderState.WAIT_EOT_ACK}))  # it really sends block 1
    sender._table = {**XMODEM_SENDER_TABLE, (SenderState.START, SenderInput.C): narrowed}
    with pytest.raises(AssertionError, match="WAIT_BLOCK_ACK"):
        sender.receive_bytes(b"C")
