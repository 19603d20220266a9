"""How much one call may ask for, the same through every way in (the API, MCP, the CLI, the pi extension):
one table, so a model or a person meets one limit whichever door it uses. The API refuses more (422); MCP
and the pi extension clamp a model's wild number instead; the CLI's options take these as their ranges."""

MAX_K = 50  # results of one search: more than a reader, person or model, takes in
MAX_WINDOW = 20  # memories on each side of a timeline's anchor
MAX_IDS = 50  # memories shown whole at once
MIN_TOKENS, MAX_TOKENS = 100, 20_000  # a briefing's budget
# How long a forgotten memory can be brought back (`undo`): its text is kept whole that long, then purged. A week
# covers "I forgot the wrong one" found the next working day, and keeps a forgotten text no longer than that.
UNDO_DAYS = 7
