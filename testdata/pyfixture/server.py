#!/usr/bin/env python3
"""A stdlib-only MCP server over stdio, for tests: the tools add and
echo, newline-delimited JSON-RPC on stdin and stdout, nothing installed
with pip. It stands for the Python servers people run: the sandbox must
start it unchanged (the interpreter, its standard library, this file)."""

import json
import sys

TOOLS = [
    {
        "name": "add",
        "description": "Add two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "echo",
        "description": "Answer with the text given.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
]


def answer(req):
    method = req.get("method")
    params = req.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "pyfixture", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        args = params.get("arguments") or {}
        name = params.get("name")
        if name == "add":
            text = str(args.get("a", 0) + args.get("b", 0))
        elif name == "echo":
            text = str(args.get("text", ""))
        else:
            raise LookupError("unknown tool " + str(name))
        return {"content": [{"type": "text", "text": text}]}
    raise LookupError("method not found: " + str(method))


def main():
    print("pyfixture serving on stdio", file=sys.stderr, flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except ValueError:
            continue
        if "id" not in req:
            continue  # a notification
        try:
            msg = {"jsonrpc": "2.0", "id": req["id"], "result": answer(req)}
        except LookupError as e:
            msg = {"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32601, "message": str(e)}}
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
