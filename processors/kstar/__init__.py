"""KSTAR's processor (``core``): portable memory records applied."""
