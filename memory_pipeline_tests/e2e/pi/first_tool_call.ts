/**
 * Test harness only: the local 0.5B chat model rarely emits a tool call on its own, so the first model request
 * of the session is prefilled with the opening of a call to one memory tool (MEMORY_TEST_FIRST_TOOL, default
 * memory_search). The model still writes the argument; llama-server parses the call; pi executes the real tool
 * of the extension against the real service.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

// The call is opened up to the argument the model must write: a search within this project, a note to keep.
const OPENING: Record<string, string> = {
  memory_search: '{"all_projects": false, "query": "',
  memory_remember: '{"priority": "high", "text": "',
};

export default function (pi: ExtensionAPI) {
  const tool = process.env.MEMORY_TEST_FIRST_TOOL ?? "memory_search";
  let done = false;
  pi.on("before_provider_request", (event) => {
    const payload = event.payload as { messages?: Array<{ role: string; content?: unknown }> };
    if (done || !payload.messages || payload.messages.at(-1)?.role !== "user") return;
    done = true;
    const prefill = `<tool_call>\n{"name": "${tool}", "arguments": ${OPENING[tool]}`;
    return { ...payload, messages: [...payload.messages, { role: "assistant", content: prefill }] };
  });
}
