"""What every layer shares, below all of them: the user's errors (errors.py: `UserInputError`, one line and exit
status 2), a config section bound to frozen dataclasses (schema.py) and the game's vocabulary (vocab.py: roles,
labels, categories, MEDEC's error types, the agent loops' and data sources' names). No verl, Ray or vLLM; it imports
no other part of the package."""
