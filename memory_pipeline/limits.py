"""How much one call may ask for, the same through every way in (the API, MCP, the CLI, the pi extension):
one table, so a model or a person meets one limit whichever door it uses. The API refuses more (422); MCP
and the pi extension clamp a model's wild number instead; the CLI's options take these as their ranges."""

MAX_K = 50  # results of one search: more than a reader, person or model, takes in
MAX_WINDOW = 20  # memories on each side of a timeline's anchor
MAX_IDS = 50  # memories shown whole at once
MIN_TOKENS, MAX_TOKENS = 100, 20_000  # a briefing's budget
