/**
 * Test harness only: the local 0.5B chat model rarely emits a tool call on its own, so the first model request
 * of the session is prefilled with the opening of a call to one tool (MEMORY_TEST_FIRST_TOOL, default
 * memory_search). The model still writes the argument; llama-server parses the call; pi executes the real tool
 * of the extension against the real service.
 *
 * That request is sampled at a low temperature: at llama-server's default (0.8) the model ends about one call in
 * four with JSON llama-server cannot parse (8 of 30 replays of the same request; 1 of 30 at 0.3), and three
 * such runs in a row failed a CI run.
 */
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const TEMPERATURE = 0.3;

// The call is opened up to the argument the model must write: a search within this project, a note to keep,
// the file to read.
const OPENING: Record<string, string> = {
  memory_search: '{"all_projects": false, "query": "',
  memory_remember: '{"priority": "high", "text": "',
  read: '{"offset": 1, "limit": 100, "path": "', // the path last: the model then closes the call
};

export default function (pi: ExtensionAPI) {
  const tool = process.env.MEMORY_TEST_FIRST_TOOL ?? "memory_search";
  let done = false;
  pi.on("before_provider_request", (event) => {
    const payload = event.payload as { messages?: Array<{ role: string; content?: unknown }> };
    if (done || !payload.messages || payload.messages.at(-1)?.role !== "user") return;
    done = true;
    // MEMORY_TEST_FIRST_CALL: the whole call, arguments closed (the model only ends its turn).
    const whole = process.env.MEMORY_TEST_FIRST_CALL;
    const prefill = whole
      ? `<tool_call>\n{"name": "${tool}", "arguments": ${whole}}\n</tool_call>`
      : `<tool_call>\n{"name": "${tool}", "arguments": ${OPENING[tool]}`;
    return {
      ...payload,
      temperature: TEMPERATURE,
      messages: [...payload.messages, { role: "assistant", content: prefill }],
    };
  });
}
