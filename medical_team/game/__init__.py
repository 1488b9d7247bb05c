"""The two-turn game, framework-free: prompts, format and answer parsing, rewards, the game manager."""
