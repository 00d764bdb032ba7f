"""A scripted model for the OpenAI Agents SDK (no network): the first turn calls one tool, the
second reads the tool's output from the input and answers "done"."""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText


class ScriptedModel(Model):
    """Calls `tool` with `arguments`, then answers "done"; keeps the tool output it was sent."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool = tool
        self.arguments = arguments
        self.tool_output = ""
        self.turn = 0

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        self.turn += 1
        if self.turn == 1:
            call = ResponseFunctionToolCall(
                type="function_call",
                id="fc_1",
                call_id="call_1",
                name=self.tool,
                arguments=json.dumps(self.arguments),
                status="completed",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        for item in input if isinstance(input, list) else []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                self.tool_output = str(item.get("output"))
        message = ResponseOutputMessage(
            type="message",
            id="msg_1",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")
