// TypeScript SDK client -> `python -m serial_mcp` over stdio.
//
// Usage: node ts_client.mjs <python> <pty-slave-path>
// Lists the tools, computes a checksum, opens the PTY, transacts one AT command, provokes one
// tool error and closes. It reports what it saw as one JSON object on stdout; the pytest side
// (test_interop.py) makes the assertions. Any protocol or schema error (the SDK validates
// structuredContent against each tool's outputSchema) throws, and the exit code is 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";

const [python, ptyPath] = process.argv.slice(2);
if (!python || !ptyPath) {
  console.error("usage: node ts_client.mjs <python> <pty-slave-path>");
  process.exit(2);
}

const transport = new StdioClientTransport({
  command: python,
  args: ["-m", "serial_mcp"],
  env: process.env,
  stderr: "inherit",
});
const client = new Client({ name: "serial-mcp-interop-ts", version: "0.0.1" });
const timeout = 30_000; // per request; the pytest side bounds the whole run as well

const report = { offeredProtocolVersion: LATEST_PROTOCOL_VERSION, protocolVersion: null };
// The client hands the negotiated version to transports that take it (HTTP ones); stdio has no
// such hook, so this one only records it.
transport.setProtocolVersion = (version) => {
  report.protocolVersion = version;
};
try {
  await client.connect(transport, { timeout });
  report.serverInfo = client.getServerVersion();
  report.capabilities = client.getServerCapabilities();

  const tools = await client.listTools(undefined, { timeout });
  report.tools = tools.tools.map((t) => ({ name: t.name, hasOutputSchema: Boolean(t.outputSchema) }));

  const sum = await client.callTool(
    { name: "compute_checksum", arguments: { data: "123456789", algorithm: "crc16_modbus" } },
    undefined,
    { timeout },
  );
  report.checksum = { isError: sum.isError ?? false, structured: sum.structuredContent, text: sum.content };

  const opened = await client.callTool({ name: "open", arguments: { port: ptyPath } }, undefined, { timeout });
  report.open = { isError: opened.isError ?? false, structured: opened.structuredContent };
  const cid = opened.structuredContent?.connection_id;

  const reply = await client.callTool(
    {
      name: "transact",
      arguments: { connection_id: cid, data: "AT+ECHO=ts-sdk\r", match: "OK\r\n", timeout_ms: 10_000 },
    },
    undefined,
    { timeout },
  );
  report.transact = { isError: reply.isError ?? false, structured: reply.structuredContent };

  const missing = await client.callTool(
    { name: "open", arguments: { port: "/dev/no-such-tty" } },
    undefined,
    { timeout },
  );
  report.missing = { isError: missing.isError ?? false, structured: missing.structuredContent };

  const closed = await client.callTool({ name: "close", arguments: { connection_id: cid } }, undefined, { timeout });
  report.close = { isError: closed.isError ?? false, structured: closed.structuredContent };
} catch (err) {
  report.error = String(err?.stack ?? err);
  process.exitCode = 1;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(report));
