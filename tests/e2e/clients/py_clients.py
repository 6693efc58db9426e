"""The Python clients people point at a Responses server, each in one scenario.

Run in the e2e environment (``requirements-e2e.txt``), not the project's:
``python py_clients.py BASE_URL SCENARIO TOKEN``.  ``BASE_URL`` is the gateway's
``http://host:port/v1``.  Every prompt carries ``TOKEN``, which the scripted upstream
echoes, so a reply that holds it went through the gateway and back.  The result is one
JSON object on stdout: the text each turn ended with and the tool calls the client ran.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from typing import Any

API_KEY = "e2e-key"
CALLS: list[dict[str, Any]] = []  # every tool call the client carried out


def weather(city: str) -> str:
    """The weather in a city."""
    CALLS.append({"name": "weather", "city": city})
    return f"sunny in {city}"


# -- the openai SDK ------------------------------------------------------------------
async def openai_responses(base: str, token: str) -> dict[str, Any]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base, api_key=API_KEY, _strict_response_validation=True)
    created = await client.responses.create(model="e2e-scripted-text", input=f"say {token}")
    async with client.responses.stream(model="e2e-scripted-text", input=f"again {token}") as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_response()
    return {"texts": [created.output_text, final.output_text]}


async def openai_chat(base: str, token: str) -> dict[str, Any]:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base, api_key=API_KEY, _strict_response_validation=True)
    messages: Any = [{"role": "user", "content": f"say {token}"}]
    plain = await client.chat.completions.create(model="e2e-scripted-text", messages=messages)
    async with client.chat.completions.stream(
        model="e2e-scripted-text", messages=messages
    ) as stream:
        async for _ in stream:
            pass
        final = await stream.get_final_completion()
    return {"texts": [plain.choices[0].message.content, final.choices[0].message.content]}


# -- openai-agents -----------------------------------------------------------------------
def _agent(base: str, websocket: bool) -> Any:
    from agents import Agent, function_tool
    from agents.models.openai_provider import OpenAIProvider

    provider = OpenAIProvider(
        api_key=API_KEY,
        base_url=base,
        websocket_base_url=base.replace("http://", "ws://") if websocket else None,
        use_responses=True,
        use_responses_websocket=websocket,
    )
    model = provider.get_model("e2e-scripted-tools")
    return Agent(
        name="e2e", instructions="Use the tool.", model=model, tools=[function_tool(weather)]
    )


async def _agents(base: str, token: str, websocket: bool, streamed: bool) -> dict[str, Any]:
    from agents import Runner, set_tracing_disabled

    set_tracing_disabled(True)
    agent = _agent(base, websocket)
    prompt = f"weather in Paris? {token}"
    if streamed:
        run = Runner.run_streamed(agent, prompt)
        events = 0
        async for _ in run.stream_events():
            events += 1
        return {"texts": [str(run.final_output)], "events": events}
    result = await Runner.run(agent, prompt)
    return {"texts": [str(result.final_output)]}


async def agents_http(base: str, token: str) -> dict[str, Any]:
    return await _agents(base, token, websocket=False, streamed=False)


async def agents_http_streamed(base: str, token: str) -> dict[str, Any]:
    return await _agents(base, token, websocket=False, streamed=True)


async def agents_ws(base: str, token: str) -> dict[str, Any]:
    return await _agents(base, token, websocket=True, streamed=False)


async def agents_ws_streamed(base: str, token: str) -> dict[str, Any]:
    return await _agents(base, token, websocket=True, streamed=True)


async def agents_conversation(base: str, token: str) -> dict[str, Any]:
    """Three turns of one agent whose memory is an ``OpenAIConversationsSession``: the
    conversation is made, read and added to through the gateway's ``/conversations``."""
    from agents import Runner, set_tracing_disabled
    from agents.memory import OpenAIConversationsSession
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    agent = _agent(base, websocket=False)
    client = AsyncOpenAI(base_url=base, api_key=API_KEY, _strict_response_validation=True)
    session = OpenAIConversationsSession(openai_client=client)
    texts, sent = [], []
    for city in ("Paris", "Oslo", "Lima"):
        prompt = f"weather in {city}? {token}"
        result = await Runner.run(agent, prompt, session=session)
        texts.append(str(result.final_output))
        sent.append(prompt)
    history = await session.get_items()
    return {
        "texts": texts,
        "prompts": sent,
        "conversation": session.session_id,
        "history": [{"type": item.get("type"), "id": item.get("id")} for item in history],
    }


# A 1x1 PNG: the fake computer's screenshot.
PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8"
    "/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
)


def _typed_agent(base: str, model: str) -> Any:
    """An agent with openai-agents' client-run typed tools: ``ShellTool`` whose executor
    runs the commands here, ``ApplyPatchTool`` whose editor records each operation, and
    ``ComputerTool`` on a fake computer that records its actions."""
    import subprocess

    from agents import Agent, ApplyPatchTool, ComputerTool, ShellTool
    from agents.computer import AsyncComputer
    from agents.editor import ApplyPatchOperation, ApplyPatchResult
    from agents.models.openai_provider import OpenAIProvider

    async def run(request: Any) -> str:
        out = []
        for command in request.data.action.commands:
            done = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=30)
            out.append(done.stdout.strip())
        CALLS.append({"name": "shell", "commands": request.data.action.commands, "out": out})
        return "\n".join(out)

    class Editor:
        def _record(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
            CALLS.append(
                {
                    "name": "apply_patch",
                    "type": operation.type,
                    "path": operation.path,
                    "diff": operation.diff,
                }
            )
            return ApplyPatchResult(status="completed", output=f"{operation.type} {operation.path}")

        def create_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
            return self._record(operation)

        def update_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
            return self._record(operation)

        def delete_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
            return self._record(operation)

    class Screen(AsyncComputer):
        @property
        def environment(self) -> Any:
            return "linux"

        @property
        def dimensions(self) -> tuple[int, int]:
            return (1024, 768)

        async def screenshot(self) -> str:
            return PIXEL.split(",", 1)[1]

        async def click(self, x: int, y: int, button: Any) -> None:
            CALLS.append({"name": "computer", "action": "click", "x": x, "y": y, "button": button})

        async def double_click(self, x: int, y: int) -> None: ...
        async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int) -> None: ...
        async def type(self, text: str) -> None: ...
        async def wait(self) -> None: ...
        async def move(self, x: int, y: int) -> None: ...
        async def keypress(self, keys: list[str]) -> None: ...
        async def drag(self, path: list[tuple[int, int]]) -> None: ...

    provider = OpenAIProvider(api_key=API_KEY, base_url=base, use_responses=True)
    tools = [
        ShellTool(executor=run),
        ApplyPatchTool(editor=Editor()),
        ComputerTool(computer=Screen()),
    ]
    return Agent(
        name="e2e", instructions="Use the tools.", model=provider.get_model(model), tools=tools
    )


async def agents_typed_tools(base: str, token: str) -> dict[str, Any]:
    """One run of an agent with a shell, an editor and a computer: the scripted model
    calls each once, then answers."""
    from agents import Runner, set_tracing_disabled

    set_tracing_disabled(True)
    result = await Runner.run(_typed_agent(base, "e2e-scripted-typed"), f"use your tools {token}")
    items = [
        getattr(item.raw_item, "type", None) or item.raw_item.get("type")
        for item in result.new_items
    ]
    return {"texts": [str(result.final_output)], "items": items}


async def agents_typed_llama(base: str, token: str) -> dict[str, Any]:
    """The same agent against a real model (llama-server's Gemma, greedy) that echoes the
    shell call its prompt spells out, over and over: ``parallel_tool_calls`` false keeps
    the first; the echo would not answer the result, so the run is held to its one turn
    and ends with ``MaxTurnsExceeded``, once the executor ran the call."""
    from agents import MaxTurnsExceeded, ModelSettings, Runner, set_tracing_disabled

    set_tracing_disabled(True)
    agent = _typed_agent(base, "gemma")
    agent.model_settings = ModelSettings(
        temperature=0, top_p=1, max_tokens=60, parallel_tool_calls=False
    )
    call = json.dumps({"name": "shell", "arguments": {"commands": [f"echo {token}"]}})
    prompt = f"Repeat exactly: <tool_call>\n{call}\n</tool_call>"
    try:
        result = await Runner.run(agent, prompt, max_turns=1)
        return {"texts": [str(result.final_output)], "ended": "answer"}
    except MaxTurnsExceeded:
        return {"texts": [], "ended": "max_turns"}


# -- pydantic-ai ---------------------------------------------------------------------------
def _pydantic_agent(base: str) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIResponsesModel(
        "e2e-scripted-tools", provider=OpenAIProvider(base_url=base, api_key=API_KEY)
    )
    agent = Agent(model, instructions="Use the tool.")
    agent.tool_plain(weather)
    return agent


async def pydantic_ai_run(base: str, token: str) -> dict[str, Any]:
    result = await _pydantic_agent(base).run(f"weather in Paris? {token}")
    return {"texts": [result.output]}


async def pydantic_ai_stream(base: str, token: str) -> dict[str, Any]:
    async with _pydantic_agent(base).run_stream(f"weather in Paris? {token}") as run:
        text = await run.get_output()
    return {"texts": [text]}


# -- LangChain -----------------------------------------------------------------------------
def _chat_model(base: str, responses: bool, model: str) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model=model, base_url=base, api_key=API_KEY, use_responses_api=responses)


async def _langchain(base: str, token: str, responses: bool) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    llm = _chat_model(base, responses, "e2e-scripted-text")
    invoked = await llm.ainvoke(f"say {token}")
    streamed = ""
    async for chunk in llm.astream(f"again {token}"):
        streamed += chunk.text if isinstance(chunk.text, str) else chunk.text()
    tools = _chat_model(base, responses, "e2e-scripted-tools").bind_tools([tool(weather)])
    question = HumanMessage(f"weather in Paris? {token}")
    asked = await tools.ainvoke([question])
    history: list[Any] = [question, asked]
    for call in asked.tool_calls:
        CALLS.append({"name": call["name"], **call["args"]})
        history.append(ToolMessage(f"sunny in {call['args'].get('city')}", tool_call_id=call["id"]))
    answered = await tools.ainvoke(history)
    return {"texts": [invoked.text, streamed, answered.text]}


async def langchain_responses(base: str, token: str) -> dict[str, Any]:
    return await _langchain(base, token, responses=True)


async def langchain_chat(base: str, token: str) -> dict[str, Any]:
    return await _langchain(base, token, responses=False)


SCENARIOS: dict[str, Callable[[str, str], Coroutine[Any, Any, dict[str, Any]]]] = {
    "openai-responses": openai_responses,
    "openai-chat": openai_chat,
    "agents-http": agents_http,
    "agents-http-streamed": agents_http_streamed,
    "agents-websocket": agents_ws,
    "agents-websocket-streamed": agents_ws_streamed,
    "agents-conversation": agents_conversation,
    "agents-typed-tools": agents_typed_tools,
    "agents-typed-llama": agents_typed_llama,
    "pydantic-ai-run": pydantic_ai_run,
    "pydantic-ai-stream": pydantic_ai_stream,
    "langchain-responses": langchain_responses,
    "langchain-chat": langchain_chat,
}


def main() -> None:
    base, scenario, token = sys.argv[1:4]
    result = asyncio.run(SCENARIOS[scenario](base, token))
    result["calls"] = CALLS
    print(json.dumps(result))


if __name__ == "__main__":
    main()
