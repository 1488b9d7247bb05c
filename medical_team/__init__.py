"""medplay: adversarial self-play on verl that teaches one policy to find medical errors in clinical notes."""

__version__ = "0.1.0"
