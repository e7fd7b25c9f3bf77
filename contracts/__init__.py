"""HiveMem's external contract: topics, Avro schemas, Pydantic models, single-object encoding.

No I/O beyond reading the packaged ``.avsc`` files; imports nothing else of ours.
"""
