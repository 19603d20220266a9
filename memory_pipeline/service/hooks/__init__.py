"""The coding agents' hook protocols: what each agent sends its hooks and takes back from them."""
