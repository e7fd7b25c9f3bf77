"""KSTAR long-term memory (seed 003, IEEE P3394): pure rules for records, schemas, control tokens, skills, filters."""
