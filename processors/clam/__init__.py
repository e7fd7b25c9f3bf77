"""CLAM's processor (``core``): the learning loop."""
