"""Resources, prompts, completions and resource-updated notifications, in both protocol eras."""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import ResourceUpdated

from serial_mcp.mcp.server import build_server
from serial_mcp.serial.fake import FakeOpener
from serial_mcp.serial.manager import ConnectionManager
from serial_mcp.serial.ports import PortInfo
from tests.mcp.notify_sync import Settled
from tests.tool_calls import call

pytestmark = pytest.mark.anyio
warnings.filterwarnings("ignore", category=DeprecationWarning)

PORT = PortInfo(
    "/dev/ttyFAKE0",
    "CP2102 USB to UART",
    None,
    "10c4",
    "ea60",
    "0001",
    "Silicon Labs",
    "CP2102",
    None,
    "1-2",
    "usb",
)


def make() -> tuple[Any, FakeOpener]:
    opener = FakeOpener()
    opener.add("/dev/ttyFAKE0")
    return build_server(ConnectionManager(opener), port_lister=lambda: [PORT]), opener


def text(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_resources_prompts_and_completions(mode: str) -> None:
    import json

    server, opener = make()
    async with Client(server, mode=mode) as c:
        uris = {str(r.uri) for r in (await c.list_resources()).resources}
        assert {"serial://ports", "serial://connections", "serial://captures"} <= uris
        templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
        assert {
            "serial://connections/{connection_id}",
            "serial://connections/{connection_id}/log",
        } <= templates
        ports = json.loads(text(await c.read_resource("serial://ports")))
        assert ports["ports"][0]["vid"] == "10c4"
        cid = (await call(c, "open", {"port": "/dev/ttyFAKE0"}))["connection_id"]
        opener.devices["/dev/ttyFAKE0"].feed(b"hello\n")
        await call(c, "read", {"connection_id": cid, "from": 0, "max_bytes": 6, "timeout_ms": 5000})
        status = json.loads(text(await c.read_resource(f"serial://connections/{cid}")))
        assert status["end_offset"] == 6 and status["cursors"]["default"]["offset"] == 0
        log = json.loads(text(await c.read_resource(f"serial://connections/{cid}/log")))
        assert [e["type"] for e in log["events"]] == ["open", "rx"]
        # reading resources consumed nothing: the default cursor still gets everything
        assert (await call(c, "read", {"connection_id": cid, "timeout_ms": 0}))["data"] == "hello\n"
        prompt_names = {p.name for p in (await c.list_prompts()).prompts}
        assert {"diagnose_port", "interactive_terminal"} <= prompt_names
        got = await c.get_prompt("diagnose_port", {"port": "/dev/ttyFAKE0"})
        assert "/dev/ttyFAKE0" in got.messages[0].content.text  # type: ignore[union-attr]
        ref = types.PromptReference(type="ref/prompt", name="diagnose_port")
        comp = await c.complete(ref, {"name": "port", "value": "/dev/tty"})
        assert comp.completion.values == ["/dev/ttyFAKE0"]
        tref = types.ResourceTemplateReference(
            type="ref/resource", uri="serial://connections/{connection_id}"
        )
        comp = await c.complete(tref, {"name": "connection_id", "value": "c"})
        assert cid in comp.completion.values
        missing = await c.call_tool("get_status", {"connection_id": "nope"})
        assert missing.is_error


@pytest.mark.slow
async def test_listen_stream_gets_open_rx_and_close_coalesced() -> None:
    server, opener = make()
    uris = ["serial://connections", "serial://connections/c1"]
    async with Client(server) as c, c.listen(resource_subscriptions=uris) as sub:
        await call(c, "open", {"port": "/dev/ttyFAKE0"})
        seen: list[str] = []
        with anyio.fail_after(5):
            while "serial://connections" not in seen:
                ev = await sub.__anext__()
                if isinstance(ev, ResourceUpdated):
                    seen.append(ev.uri)
        before = server.notifier.sent
        settled = Settled(server.notifier)
        dev = opener.devices["/dev/ttyFAKE0"]
        for _i in range(500):  # a flood of tiny chunks
            dev.feed(b"x")
        await call(c, "read", {"connection_id": "c1", "from": 0, "max_bytes": 500, "timeout_ms": 5000})
        with anyio.fail_after(5):
            while True:
                ev = await sub.__anext__()
                if isinstance(ev, ResourceUpdated) and ev.uri == "serial://connections/c1":
                    break
        await settled.wait("serial://connections/c1")  # the burst's trailing notification went out
        assert server.notifier.sent - before <= 12, "a flood is coalesced, not one notification per chunk"


async def test_legacy_subscribe_gets_resource_updated() -> None:
    server, _opener = make()
    got: list[str] = []
    arrived = anyio.Event()

    async def handler(message: IncomingMessage) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            got.append(str(message.params.uri))
            arrived.set()

    async with Client(server, mode="legacy", message_handler=handler) as c:
        assert c.server_capabilities.resources.subscribe is True  # type: ignore[union-attr]
        await c.subscribe_resource("serial://connections")
        await call(c, "open", {"port": "/dev/ttyFAKE0"})
        with anyio.fail_after(5):
            await arrived.wait()
        assert got[0] == "serial://connections"
