/**
 * Test harness only: the local 0.5B chat model rarely emits a tool call on its own, so the first model request
 * of the session is prefilled with the opening of a memory_search call. The model still writes the query;
 * llama-server parses the call; pi executes the real tool of the extension against the real service.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  let done = false;
  pi.on("before_provider_request", (event) => {
    const payload = event.payload as { messages?: Array<{ role: string; content?: unknown }> };
    if (done || !payload.messages || payload.messages.at(-1)?.role !== "user") return;
    done = true;
    const prefill = '<tool_call>\n{"name": "memory_search", "arguments": {"query": "';
    return { ...payload, messages: [...payload.messages, { role: "assistant", content: prefill }] };
  });
}
